"""The code a measurement's trace runs, here or on NDIF's server: applying lowered edits
(:func:`apply_writes`), reading a residual site (:func:`read_site`) and a row of attention weights
(:func:`row_weights`), and scoring target tokens (:func:`target_logprobs`).

NDIF's server cannot import this library. These functions use only torch and the envoys and
plain data they are given, and this module is registered with nnsight to travel **by value**
(``nnsight.register``): a block that calls one ships its source, with the one global it names
(``torch``), exactly as it ships the block's own source. So every measurement's block calls the
same code instead of repeating it, and the server runs it under its own whitelists (tested
through the loopback NDIF, ``interp.testing.loopback``). A block binds them to local names
before it opens (a module object in a block would be pickled with its loader).

The data formats are :mod:`interp.plain`'s: a *write* ``(envoy, path, at, keep, value, groups)``,
a *cut* (path ending in ``"attention_mask"``) and a *boost* (path ``("boost", call)``).

``@no_type_check`` keeps the test suite's run-time type checking from wrapping them: a wrapper
would be a function of another module, which the server could not rebuild.
"""

from __future__ import annotations

from typing import no_type_check

import nnsight
import torch


@no_type_check
def apply_writes(writes, step=0):
    """Inside a trace: apply ``writes`` (writes, cuts and boosts, :mod:`interp.plain`) in order,
    at generated step ``step`` (0: the prompt forward, or a teacher-forced forward).

    - write: ``x ← keep · x + value [+ weight · mean of x over its group]`` at the positions
      ``at`` of the tensor at ``path`` of the envoy;
    - cut (:func:`interp.plain.cut`): the attention module's mask made additive
      ``[batch, 1, query, key]`` (a boolean mask as 0 / the dtype's minimum, SDPA's causal
      shortcut — no mask — as the causal mask) and set to the minimum at queries ``at`` × keys
      ``keep`` (+ the generated keys where ``value``);
    - boost (:func:`interp.plain.boost`): the attention call's output recomputed from its inputs
      as eager attention computes it, ``a = q·Kᵀ·scaling [softcap] + mask``, with
      ``a ← a + α·|a|`` at queries × keys (every boost of the layer so far, in edit order: each
      joins a list the call's keywords carry), ``out = softmax(a)·V``.
    """
    for s, path, at, keep, value, groups in writes:
        if path[0] == "boost":
            op = getattr(s.source, path[1])
            a, kw = op.inputs
            q, key, val = a[1], a[2], a[3]
            m = a[4] if len(a) > 4 else kw.get("attention_mask")
            r = q.shape[1] // key.shape[1]  # grouped-query attention: keys repeated per head
            key, val = key.repeat_interleave(r, 1), val.repeat_interleave(r, 1)
            z = scores(q, key, m, kw)
            n = key.shape[2]
            tail = value[1].bool().expand(keep.shape[0], max(n - keep.shape[1], 0))
            k = torch.cat([keep, tail], 1)[:, -n:]
            hit = (at[:, None, :, None] & k[:, None, None, :]).to(z.device)
            kw["boosts"] = [*kw.get("boosts", ()), (hit, value[0])]  # earlier edits' too
            op.inputs = (a, kw)
            for hit, alpha in kw["boosts"]:  # a <- a + alpha |a|, in edit order
                z = torch.where(hit, z + alpha.to(z) * z.abs(), z)
            w = z.softmax(-1, dtype=torch.float32).to(q.dtype)
            op.output = ((w @ val).transpose(1, 2).contiguous(), w)
            continue
        if path[-1] == "attention_mask":
            args, kw = s.inputs
            m = kw["attention_mask"]
            h = kw["hidden_states"] if "hidden_states" in kw else args[0]
            if m is not None and m.dim() != 4:
                raise ValueError(f"a knockout needs eager or SDPA attention (a {m.dim()}-D mask)")
            n = keep.shape[1] + step if m is None else m.shape[-1]
            if m is None:  # SDPA's causal shortcut: the causal mask it stands for
                m = torch.ones(at.shape[1], n, dtype=torch.bool, device=h.device)
                m = m.tril(n - at.shape[1])
            if m.dtype == torch.bool:  # attend where True, as an additive mask
                m = torch.zeros(m.shape, dtype=h.dtype, device=h.device).masked_fill(
                    ~m, torch.finfo(h.dtype).min
                )
            k = torch.cat([keep, value.expand(keep.shape[0], max(n - keep.shape[1], 0))], 1)
            blocked = (at[:, None, :, None] & k[:, None, None, -n:]).to(m.device)
            kw["attention_mask"] = m.masked_fill(blocked, torch.finfo(m.dtype).min)
            s.inputs = (args, kw)
            continue
        v = getattr(s, path[0])
        for name in path[1:]:
            v = v[name]
        v = v[0] if isinstance(v, tuple) else v
        at = at.to(v.device)
        x = v[at]
        new = x * keep.to(x) + value.to(x)
        if groups is not None:  # + weight · the mean of x over each group
            g, count, weight = groups
            g = g.to(x.device)
            mean = x.new_zeros(count.shape[0], x.shape[-1]).index_add_(0, g, x) / count.to(x)
            new = new + mean[g] * weight.to(x)
        v[at] = new


@no_type_check
def target_logprobs(z, rows, where, tgt, scale, cap):
    """Inside a trace: ``log softmax(f(z))[rows, where, tgt]``, the natural-log probability of each
    target token from the head's output ``z`` at the position that predicts it, with ``f`` the
    forward's own transform of the head's output (``z · scale``, then ``cap · tanh(· / cap)``)."""
    z = z[rows, where]
    if scale != 1.0:
        z = z * scale
    if cap:
        z = torch.tanh(z / cap) * cap
    return z.float().log_softmax(-1).gather(-1, tgt[..., None])[..., 0]


@no_type_check
def scores(q, key, m, kw):
    """Eager attention's pre-softmax scores ``q·Kᵀ · scaling [→ cap·tanh(·/cap)] + mask`` of
    queries ``q`` ``[b, heads, q, d]`` and keys ``key`` ``[b, heads, n, d]`` under the attention
    call's mask ``m`` (None: SDPA's causal shortcut; boolean: attend where True; else additive)
    and keywords ``kw`` (``scaling``, ``softcap``)."""
    z = q @ key.transpose(-1, -2) * (kw.get("scaling") or q.shape[-1] ** -0.5)
    if kw.get("softcap"):
        z = torch.tanh(z / kw["softcap"]) * kw["softcap"]
    n, lo = key.shape[-2], torch.finfo(z.dtype).min
    if m is None:  # SDPA's causal shortcut: keys up to each query's own position
        qi = torch.arange(q.shape[-2], device=z.device)[:, None] + (n - q.shape[-2])
        return z.masked_fill(torch.arange(n, device=z.device) > qi, lo)
    if m.dtype == torch.bool:
        return z.masked_fill(~m[..., :n], lo)
    return z + m[..., :n]


@no_type_check
def read_site(s, kind, rows, index):
    """Inside a trace: the residual value at a read site of :func:`interp.plain.residual_sites`
    (``kind`` ``"output"``, ``"input"`` or a decoder keyword), cut to each row's ``index`` (a
    tuple found there stands for its first element)."""
    v = s.output if kind == "output" else s.input if kind == "input" else s.inputs[1][kind]
    return (v[0] if isinstance(v, tuple) else v)[rows, index]


@no_type_check
def row_weights(s, kind, rows, index):
    """Inside a trace: the attention weights of each row's position ``index`` in the layer
    whose attention module is ``s``, float32 ``[b, heads, keys]`` — eager attention's second
    output (``kind`` ``"attention"``) or, for ``"weights:" + call``, recomputed from the inputs
    of the attention call: ``softmax(scores)`` (:func:`scores`) of that query row."""
    if kind == "attention":
        return s.output[1][rows, :, index].float()
    a, kw = getattr(s.source, kind[len("weights:") :]).inputs
    q, key = a[1], a[2][rows]
    m = a[4] if len(a) > 4 else kw.get("attention_mask")
    if m is not None:  # the read rows and positions (a mask of batch 1 stands for every row)
        m = m.expand(len(q), -1, -1, -1)[rows, :, index][:, :, None]
    else:  # the causal shortcut, for the read positions: keys up to each one
        last = (index + key.shape[2] - q.shape[2])[:, None]  # each read position's last key
        m = ~(torch.arange(key.shape[2], device=q.device) > last)[:, None, None, :]
    q = q[rows, :, index][:, :, None]  # [b, heads, 1, d]
    key = key.repeat_interleave(q.shape[1] // key.shape[1], 1)
    return scores(q, key, m, kw)[:, :, 0].float().softmax(-1)


nnsight.register(__name__)  # functions of this module travel by source (see the docstring)

__all__ = ["apply_writes", "read_site", "row_weights", "scores"]
