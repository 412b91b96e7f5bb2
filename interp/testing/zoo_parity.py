"""Forward parity of the supported types outside the tiny-model tests (inferred entries and one-fix
entries): each built tiny on CPU from its default config, against plain Hugging Face.

:func:`tiny_inferred` shrinks the default config generically (every sub-config's widths, depths and
expert counts to the tiny sizes of :mod:`interp.testing.builders.common`) and pairs the model with a
*borrowed* tiny processor of its pattern — hand-built inputs, since no stock processor of these
types builds offline (each needs its checkpoint's tokenizer files from the hub; Pixtral's and
LFM2-VL's image processors also need torchvision):

- ``llava-like``: a ``LlavaProcessor`` around the tiny tokenizer and a 32 px CLIP image processor,
  or, for a type whose feature site takes more than ``pixel_values`` (``image_sizes``,
  ``spatial_shapes``, ``pixel_attention_mask``, ``image_merge_sizes`` ...), the type's own PIL
  image processor sized to the tiny tower (or pixels cut by hand where it needs torchvision:
  :mod:`interp.testing.builders.zoo_images`), with the per-type config fields its image size
  decides (:mod:`interp.testing.builders.zoo_configs`); each
  ``<image>`` expands to as many tokens as the model's ``get_image_features`` gives for that
  image (counted on the model, so the expansion matches by construction; the count check below
  then checks what the feature site returns for the batch);
- ``qwen-vl-like``, and a llava-like config whose vision config has ``spatial_merge_size`` (a
  Qwen-VL-style tower: LLaVA-OneVision-1.5): the tiny Qwen3-VL processor (patch 8, 2x2 merge, 2
  frames, or 1 for a tower with a 2-D patch embedding), the model's vision config set to the same
  patch, merge and frame sizes (with the type's own PIL image processor where its tower takes
  another patch layout: PaddleOCR-VL's 2-D patches);
- ``audio-lm``: the tiny Qwen2-Audio processor (Whisper features, a 2 s window; the tower's mel
  bins set to its feature size), whose ``<|AUDIO|>`` expands to as many tokens as the model's
  ``get_audio_features`` gives for that clip (``CountingAudioProcessor``: Voxtral's encoder pools
  its whole padded window; Qwen3-ASR's reads the frames' mask as ``input_features_mask``, its
  processor's name); a type with a processor of its own that builds offline takes it (GLM-ASR).

:func:`check` then runs, in order, and stops at the first failure (whose reason it returns):

1. ``reads``: :func:`interp.residual_stream` equals ``output_hidden_states`` of a plain forward of
   the same encoded inputs (:func:`interp.encoding.encode`), last token, every layer; and a black
   image in place of each image changes them (the image reaches the last token);
2. ``features``: the feature site's output count (vectors of width ``d_model``) equals the number
   of placeholder tokens in the batch, or the site gives one row per clip padded to the longest
   clip's count (an audio site before the forward keeps each clip's valid frames), or, for a site
   that runs more than once per forward, its first call's count does (as ``interp doctor`` counts:
   Ovis2's embedding table runs again on its indicator ids);
3. ``generate``: greedy :func:`interp.generate` equals ``model.generate`` token for token;
4. ``batch``: plain HF's own last-token logits of each row alone equal the row's in the batch
   (the next check compares with one row's forward alone; a model whose forward depends on the
   batch is named here, and an entry that declares it, ``batch_dependent``, runs each row alone:
   its checks run on one row);
5. ``score``: :func:`interp.score` equals a teacher-forced plain forward's log-softmax;
6. ``steer``: a :class:`interventions.Steer` edit equals a plain forward with the vector added to
   the layer's output by a torch hook;
7. ``swap`` (images): a :class:`interventions.SwapImage` to a black image equals a plain forward
   of the black-image encoding;
8. ``batch invariance``: the batch's reads equal each row's alone, and contrastive decoding
   generates each row's tokens alone or in the batch.

A type that fails any check keeps parity "not tested", with the reason in ``docs/families.md``;
where its tiny model builds, :func:`text_check` then runs the reads and ``score`` checks on
text-only rows (no image or audio), and the row says ``text tested`` where they pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from .builders.inferred import (
    MAX_PARAMS,
    ParityError,
    _count,
    _reason,
    tiny_inferred,
)


def _audio_samples() -> list[Any]:
    """Two rows with one audio each (noise of 0.4 s and 0.6 s at 16 kHz)."""
    import numpy as np

    from ..samples import Sample

    rng = np.random.default_rng(0)
    return [
        Sample(q, audio=(0.1 * rng.standard_normal(int(16000 * t)).astype("float32"), 16000), id=i)
        for q, t, i in (("what is this sound ?", 0.4, "a0"), ("describe it", 0.6, "a1"))
    ]


@contextlib.contextmanager
def _step(name: str) -> Iterator[None]:
    try:
        yield
    except ParityError:
        raise
    except Exception as err:  # noqa: BLE001 - the reason is the row
        raise ParityError(f"{name} fails ({_reason(err)})") from None


def _reads_match(vlm: Any, samples: list[Any]) -> tuple[torch.Tensor, Any]:
    """Residual reads of ``samples`` equal a plain forward's ``output_hidden_states`` at the last
    token, every layer (else an AssertionError); the reads and the encoding."""
    import interp

    from ..encoding import encode
    from .reference import hf_last_states

    states = interp.residual_stream(vlm, samples, progress_bar=False)
    enc = encode(vlm, samples, "full")
    ref = hf_last_states(vlm, enc)
    torch.testing.assert_close(states[:, : vlm.n_layers], ref, rtol=0, atol=1e-5)
    return states, enc


def _scores_match(vlm: Any, samples: list[Any], step: str) -> None:
    """:func:`interp.score` of two targets equals a teacher-forced plain forward's
    log-probabilities (else a :class:`ParityError` naming ``step``)."""
    import interp

    from ..encoding import encode
    from .reference import hf_target_logprobs

    targets = ["yellow banana", "two"][: len(samples)]
    scores = interp.score(vlm, samples, targets, progress_bar=False)
    for i, (sample, target) in enumerate(zip(samples, targets)):
        tgt = vlm.tokenizer(target, add_special_tokens=False)["input_ids"]
        want = hf_target_logprobs(vlm, encode(vlm, [sample], "full"), tgt)
        gap = float((scores.logprobs[i, : len(tgt)] - want).abs().max())
        if gap > 1e-4:  # one significant digit: the row stays the same across machines
            raise ParityError(
                f"{step} fails (log-probabilities {gap:.0e} from a teacher-forced forward's)"
            )


def _padded(seen: list[Any], per_row: list[int], width: int) -> bool:
    """Whether a feature site's one output is ``[clips, longest, width]``: one row per clip (one
    per batch row here), padded to the longest clip's placeholder count (an audio projector
    before the forward keeps each clip's valid frames, as Qwen2-Audio's)."""
    if len(seen) != 1:
        return False
    out = seen[0]
    for name in ("pooler_output", "last_hidden_state"):
        if getattr(out, name, None) is not None:
            out = getattr(out, name)
            break
    return isinstance(out, torch.Tensor) and tuple(out.shape) == (
        len(per_row),
        max(per_row),
        width,
    )


def _hf_batch_invariant(vlm: Any, samples: list[Any], enc: Any) -> None:
    """Plain HF's own last-token logits of each row alone equal those of the row in the batch
    (else a :class:`ParityError`: the model's forward depends on the batch, as HunYuan-VL's
    rotary image index counts images across the batch's rows)."""
    from ..encoding import encode
    from .reference import hf_forward

    batched = hf_forward(vlm, enc).logits
    for i, sample in enumerate(samples):
        one = encode(vlm, [sample], "full")
        alone = hf_forward(vlm, one).logits[0, one.last_index[0]]
        gap = float((batched[i, enc.last_index[i]] - alone).abs().max())
        if gap > 1e-4:
            raise ParityError(
                f"batch fails (plain HF's own logits of row {i} alone and in the batch differ "
                f"by {gap:.0e}: its forward depends on the batch)"
            )


def _batch_invariant(vlm: Any, samples: list[Any], states: torch.Tensor, amateur: str) -> None:
    """The batch's reads equal each row's read alone, and contrastive decoding (against
    ``amateur``) generates each row's tokens whether the row runs alone or in the batch (else
    an AssertionError or a :class:`ParityError`)."""
    import interp
    from interventions import decoding

    from .tolerance import assert_close

    alone = torch.cat([interp.residual_stream(vlm, [s], progress_bar=False) for s in samples])
    assert_close(alone, states, msg="reads alone against the batch's")
    method = decoding.method("contrast", amateur=amateur)
    kw = {"max_new_tokens": 3, "decoding": method, "progress_bar": False}
    both = interp.generate(vlm, samples, batch_size=len(samples), **kw).token_ids
    one = [interp.generate(vlm, [s], batch_size=1, **kw).token_ids[0] for s in samples]
    if both != one:
        raise ParityError(
            "batch invariance fails (contrastive decoding generates other tokens in the batch)"
        )


def _text_samples() -> list[Any]:
    """Two rows of text alone (no image, no audio)."""
    from ..samples import Sample

    return [Sample("what colour is a banana ?", id="t0"), Sample("how many legs ?", id="t1")]


def text_check(model_type: str, without: tuple[str, ...] = ()) -> str:
    """Where :func:`check` fails past the build: whether text-only rows (no image or audio) still
    run at HF parity — residual reads equal ``output_hidden_states`` and ``score`` equals a
    teacher-forced forward (``without``: as :func:`check`'s). ``""`` if they do, else the
    reason."""
    try:
        model, processor, _ = tiny_inferred(model_type, probe_images=False, without=without)
    except ParityError as err:
        return str(err)
    return text_check_built(model, processor)


def text_check_built(model: Any, processor: Any) -> str:
    """:func:`text_check` on a model and processor built already (a family's tiny builder with
    its stock processor): ``""`` where text-only rows pass, else the reason."""
    import interp

    try:
        with _step("text load"):
            vlm = interp.load(model, processor)
        samples = _text_samples()
        with _step("text reads"):
            _reads_match(vlm, samples)
        with _step("text score"):
            _scores_match(vlm, samples, "text score")
    except ParityError as err:
        return str(err)
    return ""


def check(model_type: str, without: tuple[str, ...] = ()) -> tuple[str, str]:
    """Run the checks of the module docstring on ``model_type``'s tiny model (``without``: tower
    configs left None, :func:`tiny_inferred`): returns the name of the borrowed processor and
    ``""``, or the name and the first failure's reason."""
    try:
        model, processor, name = tiny_inferred(model_type, without=without)
    except ParityError as err:
        return "", str(err)
    return name, check_built(model, processor)


def check_built(model: Any, processor: Any) -> str:
    """The checks of the module docstring on a model and processor built already (a family's
    tiny builder with its stock processor): ``""`` where all pass, else the first failure's
    reason."""
    import interp
    from interventions import Steer, SwapImage

    from ..adapters.base import get_path
    from ..encoding import encode
    from .reference import add_to_layer, hf_forward, hf_last_states
    from .samples import make_samples

    try:
        with _step("load"):
            vlm = interp.load(model, processor)
        kind = vlm.adapter.modalities[0]
        samples = make_samples(2)
        if kind == "audio":
            samples = _audio_samples()
        if vlm.adapter.batch_dependent:  # the library runs each row alone: so do the checks
            samples = samples[:1]
        with _step("reads"):
            states, enc = _reads_match(vlm, samples)
            L = vlm.n_layers
            if kind == "image":  # the image reaches the reads (else they check text alone)
                black = interp.residual_stream(vlm, samples, "null:black", progress_bar=False)
                if (black - states).abs().max() <= 1e-4:
                    raise ParityError("reads fails (the image does not reach the last token)")
        with _step("features"):
            seen: list[Any] = []
            site = get_path(model, vlm.adapter.features_path(kind))
            hook = site.register_forward_hook(lambda _m, _a, out: seen.append(out))
            try:
                hf_forward(vlm, enc)
            finally:
                hook.remove()
            got = sum(_count(o, vlm.d_model) for o in seen)
            want = int(enc.mask(kind).sum())
            per_row = [int(n) for n in enc.mask(kind).sum(1).tolist() if n]
            if got != want and len(seen) > 1 and _count(seen[0], vlm.d_model) == want:
                got = want  # a site that runs again for other vectors (Ovis2's table)
            if got != want and not _padded(seen, per_row, vlm.d_model):
                raise ParityError(f"features fails ({got} feature vectors, {want} placeholders)")
        with _step("generate"):
            gen = interp.generate(vlm, samples, max_new_tokens=3, progress_bar=False)
            with torch.no_grad():
                ids = model.generate(**enc.inputs, max_new_tokens=3, do_sample=False)
            n = enc.inputs["input_ids"].shape[1]
            if gen.token_ids != [row[n:].tolist()[: len(g)] for row, g in zip(ids, gen.token_ids)]:
                raise ParityError("generate fails (greedy tokens differ from model.generate)")
        if not vlm.adapter.batch_dependent:
            with _step("batch"):  # the score check compares with one row's forward alone
                _hf_batch_invariant(vlm, samples, enc)
        with _step("score"):
            _scores_match(vlm, samples, "score")
        with _step("steer"):
            v = 0.5 * torch.randn(vlm.d_model, generator=torch.Generator().manual_seed(0))
            steered = interp.residual_stream(
                vlm, samples, edits=[Steer(1, v, "all")], progress_bar=False
            )
            with add_to_layer(vlm, 1, v, enc.attention_mask.bool()):
                ref = hf_last_states(vlm, enc)
            torch.testing.assert_close(steered[:, :L], ref, atol=1e-4, rtol=0)
            if (steered[:, L] - states[:, L]).abs().max() <= 1e-3:
                raise ParityError("steer fails (the edit changed nothing)")
        if kind == "image":
            with _step("swap"):  # the black image's vectors in place of each image's
                swapped = interp.residual_stream(
                    vlm, samples, edits=[SwapImage("null:black")], progress_bar=False
                )
                ref = hf_last_states(vlm, encode(vlm, samples, "null:black"))
                torch.testing.assert_close(swapped[:, :L], ref, rtol=0, atol=1e-5)
        if len(samples) > 1:
            with _step("batch invariance"):
                # a family that cannot batch rows without the image gets an image amateur
                amateur = "blind" if vlm.adapter.mixed(kind) else "null:black"
                _batch_invariant(vlm, samples, states, amateur if kind == "image" else "no_audio")
    except ParityError as err:
        return str(err)
    return ""


__all__ = [
    "MAX_PARAMS",
    "ParityError",
    "check",
    "check_built",
    "text_check",
    "text_check_built",
    "tiny_inferred",
]
