r"""Temporal causal drives: how the image, the question and the generated prefix drive each token.

From *Who Drives the Probability Game of VLMs? A Temporal Causal Drive Evaluation Framework* (see
``docs/papers.md``). A generated answer a_1..a_T is scored by teacher forcing under interventions
on its sources — the visual input V, the question Q and the generated prefix a_<t — and each
source's drive at step t is a log-ratio (base 2) against a shared null reference. With a support of
K observed (image, question) pairs (v_k, q_k), uniform weights w_k = 1/K (the empirical
P(V) P(Q|V) of Eq. 1 and P(V) of Eq. 2 on a finite support, Supplementary Sec. 9.1):

- P0 (Eq. 4):    log2 P0(a≤t) = Σ_{i≤t} log2 P(a_i | a_<i, V=∅, Q=∅)
- PCD (Eq. 6):   PCD_t = log2 Σ_k w_k P(a_t | a_<t, v_k, q_k) − log2 P0(a≤t)
- QCD (Eqs. 9-11): QCD_t = log2 Σ_k w_k Π_{i≤t} P(a_i | a_<i, v_k, q) − log2 P0(a≤t), q the
  sample's own question
- VCD (Eq. 14):  VCD_t = Σ_{i≤t} log2 P(a_i | a_<i, v, Q=∅) − log2 P0(a≤t), v the sample's image
- PMI_Q (Eq. 24): log2 P(a_t | a_<t, v, q) − log2 P(a_t | a_<t, v)   (Q removed: the null question)
- PMI_P (Eq. 25): log2 P(a_t | a_<t, v, q) − log2 P(a_t | v, q)      (the prefix removed)

Note that the paper's PCD divides a *token-level* probability by the *cumulative* P0(a≤t)
(Sec. 4, under Eq. 6), so PCD grows with t as −log2 P0(a≤t) does; it is implemented as written.

**Cost.** One teacher-forced forward of a context gives every position's log-probability at once,
so a sample costs exactly 2K + 2 forwards (K for PCD, K for QCD, 1 for VCD, 1 for P0) plus 2 for
the PMI baselines (the full input, and the full input without the prefix; PMI_Q's denominator is
VCD's forward); never one forward per token. The forwards are batched across samples and contexts
(rows of one condition share a batch). Sums over the support are log-sum-exps.

**Null sources.** ``null_image`` is what V = ∅ means in P0: ``"blind"`` (no image at all; the
default), a trivial image (``"black"``, ``"white"``, ``"noise"``, ``"mean"``, sized like the
sample's image) or ``"mismatched"`` (the image of the next sample whose image differs).
``null_question`` is the text of Q = ∅ in P0, VCD and PMI_Q: ``""`` (an empty question; the
default) or a task-agnostic prompt such as ``"Please provide a response."`` (Supplementary
Sec. 10).

Entry points: :func:`causal_drives` (→ :class:`CausalDrives`), :func:`source_removal` (Table 3),
:func:`recovery_error` (Eq. 15, Fig. 5), :func:`cluster_drives` (Fig. 3, Supplementary Sec. 11),
:func:`prefix_visual_imbalance` (S_PV, Table 4, Supplementary Sec. 12), :func:`drive_sensitivity`
(Supplementary Sec. 10), the figures ``plot_*``, and the command ``interp drives``.
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float, Int

from interp.cli import (
    DEMO_HELP,
    UsageError,
    add_common_arguments,
    check_common_arguments,
    check_label,
    check_model,
    check_output_dir,
    load_data,
    write_summary,
)
from interp.conditions import Condition, Part, stable_seed
from interp.errors import (
    ConditionError,
    DriveError,
    EmptyTargetError,
    ImageError,
    SupportError,
    TooFewSamplesError,
)
from interp.samples import IMAGE_SLOT, Sample, ensure_samples

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from torch import Tensor

    from interp.edits import Intervention
    from interp.model import VLM
    from interp.runner import Shard

LN2 = math.log(2.0)
NULL_IMAGES: tuple[str, ...] = ("blind", "black", "white", "noise", "mean", "mismatched")
NEUTRAL_PROMPT = "Please provide a response."
DRIVES: tuple[str, ...] = ("qcd", "vcd", "pcd")
DEFAULT_QTYPES: tuple[str, ...] = ("describe",)
FULL = Condition(Part("full"))


# -- null sources, support, targets ---------------------------------------------------------------


def _null_image_name(null_image: str) -> str:
    """The canonical name of a null image (``"none"`` is ``"blind"``, ``"null:black"`` is
    ``"black"``)."""
    name = str(null_image).strip().lower()
    name = {"none": "blind", "": "blind"}.get(name, name)
    if name.startswith("null:"):
        name = name[5:]
    if name not in NULL_IMAGES:
        raise ConditionError(
            f"unknown null image {null_image!r}; use one of {', '.join(NULL_IMAGES)} ('blind' or "
            "'none': no image)"
        )
    return name


def _question_part(null_question: str) -> Part:
    """The question part of Q = ∅: an empty question, or the given text."""
    if not isinstance(null_question, str):
        raise ConditionError(
            f"null_question must be a string ('' for an empty question), got "
            f"{type(null_question).__name__}"
        )
    text = null_question.strip()
    return Part("no_question") if not text else Part("ask", text)


def _check_images(samples: Sequence[Sample], what: str = "sample") -> None:
    for s in samples:
        if not s.has_image:
            raise ImageError(
                f"{what} {s.id!r} has no image: causal drives intervene on the image of every "
                "sample and of every support context; give each an image or drop it"
            )


def draw_support(samples: Sequence[Sample], k: int = 20, *, seed: int = 0) -> list[Sample]:
    """K observed (image, question) pairs drawn uniformly without replacement from ``samples``:
    the finite support of the backdoor adjustments (empirical P(V) P(Q|V), uniform weights;
    Supplementary Sec. 9.1 of the paper).

    Raises:
        SupportError: ``k`` < 1 or more than the samples available.
        ImageError: a sample without an image.
    """
    samples = ensure_samples(samples)
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise SupportError(f"k must be an integer >= 1 (the support size K), got {k!r}")
    if k > len(samples):
        raise SupportError(
            f"k={k} but only {len(samples)} observed (image, question) pairs to draw the support "
            "from; lower k or pass more samples (or support=...)"
        )
    _check_images(samples)
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(samples), size=int(k), replace=False).tolist())
    return [samples[i] for i in picked]


def _resolve_support(
    samples: list[Sample], support: Sequence[Sample] | None, k: int, seed: int
) -> list[Sample]:
    if support is None:
        return draw_support(samples, k, seed=seed)
    support = list(support)
    if not support:
        raise SupportError("support is empty; give at least one (image, question) sample")
    for i, s in enumerate(support):
        if not isinstance(s, Sample):
            raise SupportError(f"support[{i}] is a {type(s).__name__}, expected interp.Sample")
    _check_images(support, "support sample")
    return support


def _compose(question: str, images: Any, sid: str) -> Sample:
    """A sample with ``question`` and the images of another sample; image slots that no longer
    match the number of images are dropped (the images then come first)."""
    n = len(images) if isinstance(images, list) else (0 if images is None else 1)
    if IMAGE_SLOT in question and question.count(IMAGE_SLOT) != n:
        question = " ".join(p.strip() for p in question.split(IMAGE_SLOT) if p.strip())
    return Sample(question, images, None, sid)


def _mismatched_partners(samples: list[Sample]) -> list[int]:
    """For each sample, the index of the next sample (cyclically) whose images differ."""
    from interp.samples import image_digest

    digests = [tuple(image_digest(im, s.id) for im in s.images) for s in samples]
    out = []
    for i in range(len(samples)):
        j = next(
            (
                (i + d) % len(samples)
                for d in range(1, len(samples))
                if digests[(i + d) % len(samples)] != digests[i]
            ),
            None,
        )
        if j is None:
            raise SupportError(
                "null_image='mismatched' needs at least two samples with different images"
            )
        out.append(j)
    return out


def _resolve_targets(
    vlm: VLM,
    samples: list[Sample],
    targets: Sequence[str | Sequence[int]] | None,
) -> list[list[int]] | None:
    """Token ids of given targets (checked before any compute); None when they are to be
    generated."""
    from interp.encoding import target_ids

    if targets is None:
        return None
    targets = list(targets)
    if len(targets) != len(samples):
        raise DriveError(
            f"{len(targets)} targets for {len(samples)} samples; give one per sample (or "
            "targets=None for the greedy answers)"
        )
    return target_ids(vlm, targets)


def _greedy_targets(
    vlm: VLM,
    samples: list[Sample],
    *,
    max_new_tokens: int,
    edits: Sequence[Intervention],
    batch_size: int,
    store: Path | None,
    overwrite: bool,
    progress_bar: bool,
) -> list[list[int]]:
    from interp.generation import generate

    gen = generate(
        vlm,
        samples,
        "full",
        max_new_tokens=max_new_tokens,
        edits=list(edits),
        batch_size=batch_size,
        store=store,
        overwrite=overwrite,
        progress_bar=progress_bar,
    )
    empty = [sid for sid, ids in zip(gen.sample_ids, gen.token_ids) if not ids]
    if empty:
        raise EmptyTargetError(
            f"the greedy answers of samples {empty[:5]} are empty (the model stopped at once); "
            "pass targets= explicitly or drop these samples"
        )
    return [list(ids) for ids in gen.token_ids]


def _check_common(batch_size: int, max_new_tokens: int) -> None:
    if batch_size < 1:
        raise DriveError(f"batch_size must be >= 1, got {batch_size}")
    if max_new_tokens < 1:
        raise DriveError(f"max_new_tokens must be >= 1, got {max_new_tokens}")


def _substore(store: str | Path | None, name: str) -> Path | None:
    return None if store is None else Path(store) / name


# -- the measurement: teacher-forced log-probabilities of every context ----------------------------

Context = tuple[Sample, Condition]
ContextsFn = Callable[[int, Sample], list[Context]]


def score_contexts(
    vlm: VLM,
    rows: Sequence[Context],
    targets: Sequence[Sequence[int]],
    *,
    batch_size: int,
    edits: Sequence[Intervention] = (),
) -> list[Tensor]:
    """Natural-log ``log p(a_t | a_<t, context)`` of each row's target, one teacher-forced
    forward per row, rows of one condition batched together (``batch_size`` rows a forward).

    Returns:
        one ``[T_row]`` tensor per row, in row order.
    """
    from interp.edits import Batch
    from interp.encoding import batches
    from interp.scoring import trace_target_logprobs

    out: list[Tensor | None] = [None] * len(rows)
    groups: dict[Condition, list[int]] = {}
    for j, (_, cond) in enumerate(rows):
        groups.setdefault(cond, []).append(j)
    for cond, where in groups.items():
        # similar lengths share a batch (less padding); every row is still scored on its own
        where = sorted(where, key=lambda j: (len(targets[j]), len(rows[j][0].question), j))
        group = [rows[j][0] for j in where]
        for sub, enc in batches(vlm, group, cond, batch_size, all_samples=group):
            batch = Batch(vlm, enc, [group[r] for r in sub], cond, "score", group)
            lp = trace_target_logprobs(vlm, batch, [targets[where[r]] for r in sub], edits)
            for row, r in enumerate(sub):
                j = where[r]
                out[j] = lp[row, : len(targets[j])].double()
    return out  # type: ignore[return-value]


def _measure(
    vlm: VLM,
    samples: list[Sample],
    targets: list[list[int]],
    contexts: ContextsFn,
    *,
    name: str,
    settings: dict[str, Any],
    extras: Sequence[Any] | None = None,
    edits: Sequence[Intervention] = (),
    batch_size: int,
    store: Path | None,
    overwrite: bool,
    shard: Shard,
    progress_bar: bool,
) -> list[np.ndarray]:
    """Per sample, the ``[C, T]`` natural-log probabilities of its target under its C contexts
    (``contexts(i, sample)``, the same C for every sample), through the shared runner (stores,
    resume, progress bar). A chunk of ``batch_size`` samples is scored at a time, so every
    condition's rows fill whole forwards of ``batch_size`` rows."""
    import torch

    from interp.runner import Job, run

    probe = contexts(0, samples[0])
    conds = list(dict.fromkeys(c for _, c in probe))
    job = Job(
        name,
        settings,
        conditions=conds,
        edits=list(edits),
        extras=[[t, e] for t, e in zip(targets, extras or [None] * len(targets))],
        pool=samples,
    )
    index = {str(s.id): i for i, s in enumerate(samples)}

    def compute(chunk: list[Sample]) -> tuple[dict[str, Tensor], list[dict[str, Any]]]:
        rows: list[Context] = []
        tgts: list[list[int]] = []
        counts = []
        for s in chunk:
            i = index[str(s.id)]
            ctx = contexts(i, s)
            rows.extend(ctx)
            tgts.extend([targets[i]] * len(ctx))
            counts.append(len(ctx))
        if len(set(counts)) != 1:
            raise DriveError("every sample must have the same number of contexts")
        lps = score_contexts(vlm, rows, tgts, batch_size=batch_size, edits=edits)
        width = max(len(targets[index[str(s.id)]]) for s in chunk)
        out = torch.zeros(len(chunk), counts[0], width, dtype=torch.float64)
        for r, lp in enumerate(lps):
            out[r // counts[0], r % counts[0], : len(lp)] = lp
        return {"logprobs": out}, [{"n": len(targets[index[str(s.id)]])} for s in chunk]

    _, tensors, records = run(
        vlm,
        samples,
        job,
        compute,
        batch_size=batch_size,
        store=store,
        overwrite=overwrite,
        shard=shard,
        progress_bar=progress_bar,
    )
    return [tensors["logprobs"][i, :, : r["n"]].numpy() for i, r in enumerate(records)]


def _logsumexp(x: np.ndarray, axis: int = 0) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def _pad(rows: Sequence[np.ndarray], width: int) -> np.ndarray:
    out = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def _null_context(
    s: Sample,
    i: int,
    samples: list[Sample],
    null_image: str,
    question: Part | None,
    partners: list[int] | None,
    tag: str,
) -> Context:
    """The input with V = ∅ (and the question part ``question``: Q = ∅, or None to keep it)."""
    sid = f"{s.id}|{tag}"
    if null_image == "blind":
        return _compose(s.question, s.image, sid), Condition(Part("blind"), question)
    if null_image == "mismatched":
        assert partners is not None
        other = samples[partners[i]]
        return _compose(s.question, other.image, sid), Condition(Part("full"), question)
    return _compose(s.question, s.image, sid), Condition(Part("null", null_image), question)


# -- causal drives ---------------------------------------------------------------------------------


@dataclass
class CausalDrives:
    """Per-token causal drives of N generations, in bits (log base 2).

    Every array is ``[N, T]`` with T the longest target; ``mask`` is True for the first
    ``len(token_ids[i])`` entries of row i, and entries past a target's end are NaN.

    Attributes:
        p0: log2 P0(a≤t), the cumulative null-source log-likelihood (Eq. 4).
        pcd: Prefix Causal Drive (Eq. 6), token-level numerator over the cumulative P0.
        qcd: Question Causal Drive (Eqs. 9-11).
        vcd: Visual Causal Drive (Eq. 14).
        pmi_q, pmi_p: the PMI baselines of Eqs. 24 and 25 (None when not computed).
        sample_ids, token_ids, tokens, answers: the targets.
        support_ids: the ids of the K support samples.
        null_image, null_question: what V = ∅ and Q = ∅ were.
        forwards_per_sample: teacher-forced forwards each sample cost (2K + 2, + 2 with PMI).
    """

    sample_ids: list[str]
    token_ids: list[list[int]]
    tokens: list[list[str]]
    answers: list[str]
    p0: Float[np.ndarray, "n t"]
    pcd: Float[np.ndarray, "n t"]
    qcd: Float[np.ndarray, "n t"]
    vcd: Float[np.ndarray, "n t"]
    mask: Bool[np.ndarray, "n t"]
    pmi_q: Float[np.ndarray, "n t"] | None = None
    pmi_p: Float[np.ndarray, "n t"] | None = None
    support_ids: list[str] = field(default_factory=list)
    null_image: str = "blind"
    null_question: str = ""
    forwards_per_sample: int = 0

    def __len__(self) -> int:
        return len(self.sample_ids)

    @property
    def k(self) -> int:
        """The support size K."""
        return len(self.support_ids)

    @property
    def lengths(self) -> Int[np.ndarray, " n"]:
        return self.mask.sum(axis=1).astype(np.int64)

    def drive(self, name: str) -> Float[np.ndarray, "n t"]:
        """One of ``p0``, ``pcd``, ``qcd``, ``vcd``, ``pmi_q``, ``pmi_p``."""
        value = getattr(self, name, None) if name in ("p0", *DRIVES, "pmi_q", "pmi_p") else None
        if value is None:
            raise DriveError(
                f"no drive {name!r} in this result; available: "
                f"{', '.join(n for n in ('p0', *DRIVES, 'pmi_q', 'pmi_p') if getattr(self, n) is not None)}"
            )
        return value

    def sample_mean(self, name: str) -> Float[np.ndarray, " n"]:
        """Mean over each answer's tokens of one drive."""
        return np.nanmean(np.where(self.mask, self.drive(name), np.nan), axis=1)

    def final(self, name: str) -> Float[np.ndarray, " n"]:
        """A drive at each answer's last token: for the cumulative QCD and VCD the whole-answer
        (answer-level) drive."""
        values = self.drive(name)
        return values[np.arange(len(self)), self.lengths - 1]

    @property
    def s_pv(self) -> Float[np.ndarray, " n"]:
        """Prefix-visual imbalance S_PV = mean_t PCD − mean_t VCD per sample (Sec. 5.5)."""
        return self.sample_mean("pcd") - self.sample_mean("vcd")

    def binned(self, bins: int = 10) -> Float[np.ndarray, "n three bins"]:
        """(QCD, VCD, PCD) averaged in ``bins`` equal bins of the relative decoding position
        (:func:`probes.trajectories.relative_bins`; Supplementary Sec. 11)."""
        from probes.trajectories import relative_bins

        return np.stack([relative_bins(self.drive(d), self.mask, bins) for d in DRIVES], axis=1)

    def features(self, bins: int = 10) -> Float[np.ndarray, "n d"]:
        """z_i = [QCD_{i,1:bins}, VCD_{i,1:bins}, PCD_{i,1:bins}] (30 dimensions for 10 bins)."""
        b = self.binned(bins)
        return b.reshape(len(b), -1)

    def subset(self, rows: Sequence[int] | np.ndarray) -> CausalDrives:
        """The result for the samples at ``rows`` (indices, or a boolean mask)."""
        idx = np.asarray(rows)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64)
        width = int(self.mask[idx].sum(axis=1).max()) if len(idx) else 0

        def cut(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[idx, :width]

        return CausalDrives(
            sample_ids=[self.sample_ids[i] for i in idx],
            token_ids=[self.token_ids[i] for i in idx],
            tokens=[self.tokens[i] for i in idx],
            answers=[self.answers[i] for i in idx],
            p0=cut(self.p0),  # type: ignore[arg-type]
            pcd=cut(self.pcd),  # type: ignore[arg-type]
            qcd=cut(self.qcd),  # type: ignore[arg-type]
            vcd=cut(self.vcd),  # type: ignore[arg-type]
            mask=self.mask[idx, :width],
            pmi_q=cut(self.pmi_q),
            pmi_p=cut(self.pmi_p),
            support_ids=list(self.support_ids),
            null_image=self.null_image,
            null_question=self.null_question,
            forwards_per_sample=self.forwards_per_sample,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per answer token: ``sample_id``, ``t`` (1-based), ``n_tokens``, ``position``
        (relative, (t − 0.5)/T), ``token_id``, ``token``, ``p0``, ``qcd``, ``vcd``, ``pcd`` and,
        when computed, ``pmi_q``, ``pmi_p`` (bits)."""
        names = ["p0", *DRIVES] + [n for n in ("pmi_q", "pmi_p") if getattr(self, n) is not None]
        rows = []
        for i, sid in enumerate(self.sample_ids):
            n = len(self.token_ids[i])
            for t in range(n):
                row = {
                    "sample_id": sid,
                    "t": t + 1,
                    "n_tokens": n,
                    "position": (t + 0.5) / n,
                    "token_id": self.token_ids[i][t],
                    "token": self.tokens[i][t],
                }
                row.update({k: float(getattr(self, k)[i, t]) for k in names})
                rows.append(row)
        return pd.DataFrame(rows)

    def sample_frame(self) -> pd.DataFrame:
        """One row per sample: the answer, its length, each drive's mean over the answer, the
        answer-level (last-token) QCD and VCD, and S_PV."""
        frame = pd.DataFrame(
            {
                "sample_id": self.sample_ids,
                "answer": self.answers,
                "n_tokens": self.lengths,
                **{f"mean_{d}": self.sample_mean(d) for d in DRIVES},
                "answer_qcd": self.final("qcd"),
                "answer_vcd": self.final("vcd"),
                "s_pv": self.s_pv,
            }
        )
        for name in ("pmi_q", "pmi_p"):
            if getattr(self, name) is not None:
                frame[f"mean_{name}"] = self.sample_mean(name)
        return frame

    def mean_trajectories(self, bins: int = 10) -> pd.DataFrame:
        """Mean (and standard error) over samples of each drive per relative-position bin."""
        b = self.binned(bins)
        se = b.std(axis=0, ddof=1) / np.sqrt(len(b)) if len(b) > 1 else np.zeros(b.shape[1:])
        rows = []
        for j in range(bins):
            row: dict[str, Any] = {"bin": j + 1, "position": (j + 0.5) / bins}
            for d, name in enumerate(DRIVES):
                row[name] = float(b[:, d, j].mean())
                row[f"{name}_se"] = float(se[d, j])
            rows.append(row)
        return pd.DataFrame(rows)


def _drive_arrays(
    lps: list[np.ndarray], k: int, pmi: bool
) -> dict[str, np.ndarray | list[np.ndarray]]:
    """The drives from each sample's ``[C, T]`` natural-log context probabilities, contexts in
    the order PCD (K), QCD (K), VCD, P0 [, full, full without prefix]."""
    logw = -math.log(k)
    out: dict[str, list[np.ndarray]] = {
        n: [] for n in ("p0", "pcd", "qcd", "vcd", "pmi_q", "pmi_p")
    }
    for lp in lps:
        p0 = np.cumsum(lp[2 * k + 1])
        out["p0"].append(p0 / LN2)
        out["pcd"].append((_logsumexp(lp[:k] + logw) - p0) / LN2)
        out["qcd"].append((_logsumexp(np.cumsum(lp[k : 2 * k], axis=1) + logw) - p0) / LN2)
        out["vcd"].append((np.cumsum(lp[2 * k]) - p0) / LN2)
        if pmi:
            out["pmi_q"].append((lp[2 * k + 2] - lp[2 * k]) / LN2)
            out["pmi_p"].append((lp[2 * k + 2] - lp[2 * k + 3]) / LN2)
    return out  # type: ignore[return-value]


def drive_contexts(
    samples: Sequence[Sample],
    support: Sequence[Sample],
    *,
    null_image: str = "blind",
    null_question: str = "",
    pmi: bool = True,
) -> ContextsFn:
    """The contexts whose teacher-forced forwards give a sample's drives, in order: the K support
    pairs (v_k, q_k) for PCD, the K support images with the sample's question (v_k, q) for QCD,
    the sample's image with the null question (VCD), the null input (P0), and with ``pmi`` the
    full input and the full input without the prefix. Returns ``contexts(i, sample)`` giving
    sample i's ``(input sample, condition)`` pairs (used by :func:`causal_drives`, and by the bench
    to feed bare HF forwards the same inputs)."""
    samples = list(samples)
    sup = list(support)
    nimg = _null_image_name(null_image)
    qpart = _question_part(null_question)
    partners = _mismatched_partners(samples) if nimg == "mismatched" else None
    vcd_cond = Condition(Part("full"), qpart)
    noprefix = Condition(Part("full"), None, "removed")

    def contexts(i: int, s: Sample) -> list[Context]:
        rows: list[Context] = [
            (_compose(c.question, c.image, f"{s.id}|pcd{j}"), FULL) for j, c in enumerate(sup)
        ]
        rows += [(_compose(s.question, c.image, f"{s.id}|qcd{j}"), FULL) for j, c in enumerate(sup)]
        rows.append((_compose(s.question, s.image, f"{s.id}|vcd"), vcd_cond))
        rows.append(_null_context(s, i, samples, nimg, qpart, partners, "p0"))
        if pmi:
            rows.append((_compose(s.question, s.image, f"{s.id}|full"), FULL))
            rows.append((_compose(s.question, s.image, f"{s.id}|noprefix"), noprefix))
        return rows

    return contexts


def causal_drives(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    support: Sequence[Sample] | None = None,
    k: int = 20,
    targets: Sequence[str | Sequence[int]] | None = None,
    null_image: str = "blind",
    null_question: str = "",
    seed: int = 0,
    pmi: bool = True,
    max_new_tokens: int = 24,
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 32,
    store: str | Path | None = None,
    overwrite: bool = False,
    shard: Shard = None,
    progress_bar: bool = True,
) -> CausalDrives:
    r"""Per-token QCD, VCD, PCD (and the PMI baselines) of each sample's answer, in bits.

    For sample (v, q) with answer a_1..a_T and support {(v_k, q_k)}_{k=1..K}, w_k = 1/K:

    - log2 P0(a≤t) = Σ_{i≤t} log2 P(a_i | a_<i, ∅, ∅)                              (Eq. 4)
    - PCD_t = log2 Σ_k w_k P(a_t | a_<t, v_k, q_k) − log2 P0(a≤t)                   (Eq. 6)
    - QCD_t = log2 Σ_k w_k Π_{i≤t} P(a_i | a_<i, v_k, q) − log2 P0(a≤t)         (Eqs. 9-11)
    - VCD_t = Σ_{i≤t} log2 P(a_i | a_<i, v, ∅) − log2 P0(a≤t)                      (Eq. 14)
    - PMI_Q = log2 P(a_t | a_<t, v, q) − log2 P(a_t | a_<t, v, ∅)                  (Eq. 24)
    - PMI_P = log2 P(a_t | a_<t, v, q) − log2 P(a_t | v, q)                         (Eq. 25)

    Exactly 2K + 2 teacher-forced forwards per sample (+ 2 with ``pmi``), batched across samples
    and contexts; sums over the support with log-sum-exp.

    Args:
        samples: the generations to explain; each needs an image.
        support: the K (image, question) contexts; default: ``k`` drawn from ``samples`` with
            ``seed`` (:func:`draw_support`).
        targets: one per sample (text or token ids); default: the greedy answer under ``full``
            (``max_new_tokens``), without its end-of-sequence token.
        null_image: V = ∅ in P0: ``"blind"`` (no image), ``"black"``, ``"white"``, ``"noise"``,
            ``"mean"`` or ``"mismatched"``.
        null_question: Q = ∅ in P0, VCD and PMI_Q: ``""`` or a prompt text.
        pmi: also compute PMI_Q and PMI_P (2 more forwards per sample).
        edits: interventions applied in every forward (and in the greedy generation).
        batch_size: rows per forward; store, overwrite, shard: see :func:`interp.residual_stream`
            (the greedy answers get their own store under ``store/answers``).

    Raises:
        SupportError: ``k`` < 1, ``k`` larger than the samples, an empty support.
        ImageError: a sample or support sample without an image.
        EmptyTargetError: a target that tokenises to nothing (or an empty greedy answer).
        ConditionError: an unknown ``null_image``.
        DriveError: not one target per sample, or bad ``batch_size`` / ``max_new_tokens``.
    """
    from interp.edits import check_edits
    from interp.encoding import warn_unknown_tokens

    samples = ensure_samples(samples)
    _check_images(samples)
    nimg = _null_image_name(null_image)
    qpart = _question_part(null_question)
    _check_common(batch_size, max_new_tokens)
    sup = _resolve_support(samples, support, k, seed)
    ids = _resolve_targets(vlm, samples, targets)
    edits = check_edits(vlm, edits)
    partners = _mismatched_partners(samples) if nimg == "mismatched" else None
    if qpart.arg:
        warn_unknown_tokens(vlm, [Sample(qpart.arg)])
    if ids is None:
        ids = _greedy_targets(
            vlm,
            samples,
            max_new_tokens=max_new_tokens,
            edits=edits,
            batch_size=batch_size,
            store=_substore(store, "answers"),
            overwrite=overwrite,
            progress_bar=progress_bar,
        )
    K = len(sup)
    contexts = drive_contexts(samples, sup, null_image=nimg, null_question=qpart.arg or "", pmi=pmi)

    settings = {
        "support": [c.fingerprint() for c in sup],
        "null_image": nimg,
        "null_question": qpart.arg or "",
        "pmi": pmi,
    }
    extras = None
    if partners is not None:
        extras = [samples[j].fingerprint() for j in partners]
    lps = _measure(
        vlm,
        samples,
        ids,
        contexts,
        name="causal_drives",
        settings=settings,
        extras=extras,
        edits=edits,
        batch_size=batch_size,
        store=_substore(store, "drives"),
        overwrite=overwrite,
        shard=shard,
        progress_bar=progress_bar,
    )
    arrays = _drive_arrays(lps, K, pmi)
    width = max(len(t) for t in ids)
    mask = np.zeros((len(samples), width), dtype=bool)
    for i, t in enumerate(ids):
        mask[i, : len(t)] = True
    return CausalDrives(
        sample_ids=[str(s.id) for s in samples],
        token_ids=ids,
        tokens=[list(vlm.tokenizer.convert_ids_to_tokens(t)) for t in ids],
        answers=[vlm.tokenizer.decode(t, skip_special_tokens=True).strip() for t in ids],
        p0=_pad(arrays["p0"], width),
        pcd=_pad(arrays["pcd"], width),
        qcd=_pad(arrays["qcd"], width),
        vcd=_pad(arrays["vcd"], width),
        mask=mask,
        pmi_q=_pad(arrays["pmi_q"], width) if pmi else None,
        pmi_p=_pad(arrays["pmi_p"], width) if pmi else None,
        support_ids=[str(c.id) for c in sup],
        null_image=nimg,
        null_question=qpart.arg or "",
        forwards_per_sample=2 * K + 2 + (2 if pmi else 0),
    )


def _check_matches(samples: list[Sample], drives: CausalDrives) -> None:
    got = [str(s.id) for s in samples]
    if got != drives.sample_ids:
        raise DriveError(
            "the samples are not those of the drive result (ids or order differ); pass the same "
            "samples, in the same order, as to causal_drives"
        )


# -- source removal (Table 3) ----------------------------------------------------------------------

REMOVALS: tuple[tuple[str, str], ...] = (
    ("Q", "no_question"),
    ("V", "no_image"),
    ("A<t", "no_prefix"),
)


@dataclass
class SourceRemoval:
    """Token probabilities of fixed answers with each source removed (Table 3, Fig. 4).

    Attributes:
        probs: ``full``, ``no_question`` (Q = ∅), ``no_image`` (V = ∅, the question kept) and
            ``no_prefix`` (each token scored right after the prompt): ``[N, T]`` probabilities,
            NaN past each answer's end.
        mask: True at answer tokens.
    """

    sample_ids: list[str]
    probs: dict[str, np.ndarray]
    mask: Bool[np.ndarray, "n t"]
    null_image: str = "blind"
    null_question: str = ""

    def per_sample(self) -> pd.DataFrame:
        """Each sample's mean token probability under each condition."""
        return pd.DataFrame(
            {"sample_id": self.sample_ids}
            | {k: np.nanmean(np.where(self.mask, v, np.nan), axis=1) for k, v in self.probs.items()}
        )

    def to_frame(self) -> pd.DataFrame:
        """Table 3: per removed source, P_full and P_remove (the means over samples of each
        sample's mean token probability) and the share of samples whose mean token probability
        drops when the source is removed."""
        per = self.per_sample()
        rows = []
        for source, key in REMOVALS:
            rows.append(
                {
                    "removed": source,
                    "p_full": float(per["full"].mean()),
                    "p_remove": float(per[key].mean()),
                    "fraction_decreased": float((per[key] < per["full"]).mean()),
                    "n": len(per),
                }
            )
        return pd.DataFrame(rows)

    def binned(self, bins: int = 10) -> dict[str, np.ndarray]:
        """Each condition's token probabilities in relative-position bins ``[N, bins]``."""
        from probes.trajectories import relative_bins

        return {k: relative_bins(np.nan_to_num(v), self.mask, bins) for k, v in self.probs.items()}


def source_removal(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    targets: Sequence[str | Sequence[int]] | None = None,
    null_image: str = "blind",
    null_question: str = "",
    max_new_tokens: int = 24,
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 32,
    store: str | Path | None = None,
    overwrite: bool = False,
    shard: Shard = None,
    progress_bar: bool = True,
) -> SourceRemoval:
    """Source-removal sanity check (Sec. 5.4, Table 3, Fig. 4): the fixed answer's token
    probabilities P(a_t | a_<t, v, q) under the full input, without Q (the null question),
    without V (the null image, question kept) and without the prefix (P(a_t | v, q)): 4
    teacher-forced forwards per sample.

    Args: as :func:`causal_drives` (``targets`` default to the greedy answers).

    Raises: as :func:`causal_drives`.
    """
    from interp.edits import check_edits
    from interp.encoding import warn_unknown_tokens

    samples = ensure_samples(samples)
    _check_images(samples)
    nimg = _null_image_name(null_image)
    qpart = _question_part(null_question)
    _check_common(batch_size, max_new_tokens)
    ids = _resolve_targets(vlm, samples, targets)
    edits = check_edits(vlm, edits)
    partners = _mismatched_partners(samples) if nimg == "mismatched" else None
    if qpart.arg:
        warn_unknown_tokens(vlm, [Sample(qpart.arg)])
    if ids is None:
        ids = _greedy_targets(
            vlm,
            samples,
            max_new_tokens=max_new_tokens,
            edits=edits,
            batch_size=batch_size,
            store=_substore(store, "answers"),
            overwrite=overwrite,
            progress_bar=progress_bar,
        )

    def contexts(i: int, s: Sample) -> list[Context]:
        return [
            (_compose(s.question, s.image, f"{s.id}|full"), FULL),
            (_compose(s.question, s.image, f"{s.id}|noq"), Condition(Part("full"), qpart)),
            _null_context(s, i, samples, nimg, None, partners, "nov"),
            (
                _compose(s.question, s.image, f"{s.id}|nop"),
                Condition(Part("full"), None, "removed"),
            ),
        ]

    extras = None if partners is None else [samples[j].fingerprint() for j in partners]
    lps = _measure(
        vlm,
        samples,
        ids,
        contexts,
        name="source_removal",
        settings={"null_image": nimg, "null_question": qpart.arg or ""},
        extras=extras,
        edits=edits,
        batch_size=batch_size,
        store=_substore(store, "removal"),
        overwrite=overwrite,
        shard=shard,
        progress_bar=progress_bar,
    )
    width = max(len(t) for t in ids)
    mask = np.zeros((len(samples), width), dtype=bool)
    for i, t in enumerate(ids):
        mask[i, : len(t)] = True
    names = ("full", "no_question", "no_image", "no_prefix")
    probs = {n: _pad([np.exp(lp[c]) for lp in lps], width) for c, n in enumerate(names)}
    return SourceRemoval([str(s.id) for s in samples], probs, mask, nimg, qpart.arg or "")


# -- randomized-intervention recovery (Eq. 15, Fig. 5) ---------------------------------------------


@dataclass
class Recovery:
    """Recovery of the randomized-intervention reference G(t) by the drives and by PMI.

    Attributes:
        g_q: G_Q(t) = log2 (1/M) Σ_m Π_{i≤t} P(a_i | a_<i, v_m, q) − log2 P0(a≤t): the question
            fixed, images of M held-out contexts.
        g_p: G_P(t) = log2 (1/M) Σ_m P(a_t | a_<t, v_m, q_m) − log2 P0(a≤t): the prefix fixed,
            M held-out (image, question) pairs.
        errors: ``|D(t) − G(t)|`` per token for ``qcd`` and ``pmi_q`` (against G_Q) and ``pcd``
            and ``pmi_p`` (against G_P), ``[N, T]``.
        context_ids: the held-out contexts' ids.
    """

    sample_ids: list[str]
    g_q: Float[np.ndarray, "n t"]
    g_p: Float[np.ndarray, "n t"]
    errors: dict[str, np.ndarray]
    mask: Bool[np.ndarray, "n t"]
    context_ids: list[str] = field(default_factory=list)
    k: int = 0

    @property
    def m(self) -> int:
        return len(self.context_ids)

    def per_target(self) -> pd.DataFrame:
        """Err(D) = (1/T) Σ_t |D(t) − G(t)| (Eq. 15) per target, for QCD, PMI_Q, PCD, PMI_P."""
        return pd.DataFrame(
            {"sample_id": self.sample_ids}
            | {
                f"err_{k}": np.nanmean(np.where(self.mask, v, np.nan), axis=1)
                for k, v in self.errors.items()
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """Per intervention (question, prefix): mean Err of the drive and of PMI over targets,
        the reduction of the mean (1 − mean Err(drive) / mean Err(PMI)), the mean of per-target
        reductions, and the share of targets where the drive's error is lower."""
        per = self.per_target()
        rows = []
        for source, drive, base in (("question", "qcd", "pmi_q"), ("prefix", "pcd", "pmi_p")):
            d, p = per[f"err_{drive}"].to_numpy(), per[f"err_{base}"].to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                each = 1.0 - d / p
            rows.append(
                {
                    "intervention": source,
                    "drive": drive.upper(),
                    "err_drive": float(d.mean()),
                    "baseline": "PMI_" + base[-1].upper(),
                    "err_pmi": float(p.mean()),
                    "reduction_of_means": float(1.0 - d.mean() / p.mean()),
                    "mean_reduction": float(np.nanmean(each)),
                    "share_drive_wins": float(np.mean(d < p)),
                    "n_targets": len(d),
                    "m": self.m,
                    "k": self.k,
                }
            )
        return pd.DataFrame(rows)

    def binned(self, bins: int = 10) -> dict[str, np.ndarray]:
        """Each error in relative-position bins ``[N, bins]``."""
        from probes.trajectories import relative_bins

        return {k: relative_bins(np.nan_to_num(v), self.mask, bins) for k, v in self.errors.items()}


def recovery_error(
    vlm: VLM,
    samples: Sequence[Sample],
    drives: CausalDrives,
    *,
    contexts: Sequence[Sample] | None = None,
    m: int = 100,
    seed: int = 1,
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 32,
    store: str | Path | None = None,
    overwrite: bool = False,
    shard: Shard = None,
    progress_bar: bool = True,
) -> Recovery:
    """Randomized-intervention recovery (Sec. 5.4, Eq. 15, Fig. 5): a held-out reference G(t)
    from M contexts outside the drives' support, and Err(D) = (1/T) Σ_t |D(t) − G(t)| for QCD vs
    PMI_Q (question fixed, images reassigned) and PCD vs PMI_P (prefix fixed, (image, question)
    pairs reassigned). 2M teacher-forced forwards per target; P0 is the drives'.

    Args:
        samples: the samples ``drives`` was computed on, in the same order.
        drives: a :func:`causal_drives` result with the PMI baselines.
        contexts: the held-out (image, question) contexts; default: ``m`` drawn with ``seed``
            from ``samples`` outside the drives' support.

    Raises:
        DriveError: other samples than the drives', or drives without PMI.
        SupportError: ``m`` < 1 or more than the held-out samples available.
    """
    from interp.edits import check_edits

    samples = ensure_samples(samples)
    _check_matches(samples, drives)
    if drives.pmi_q is None or drives.pmi_p is None:
        raise DriveError(
            "recovery_error compares the drives with the PMI baselines: compute the drives with "
            "pmi=True"
        )
    _check_common(batch_size, 1)
    if contexts is None:
        held = [s for s in samples if str(s.id) not in set(drives.support_ids)]
        if not isinstance(m, (int, np.integer)) or m < 1:
            raise SupportError(f"m must be an integer >= 1 (held-out contexts), got {m!r}")
        if m > len(held):
            raise SupportError(
                f"m={m} held-out contexts asked, but only {len(held)} samples lie outside the "
                f"support of K={drives.k}; lower m or pass contexts=..."
            )
        rng = np.random.default_rng(seed)
        ctx = [held[i] for i in sorted(rng.choice(len(held), size=int(m), replace=False).tolist())]
    else:
        ctx = list(contexts)
        if not ctx:
            raise SupportError("contexts is empty; give at least one held-out (image, question)")
    _check_images(ctx, "held-out context")
    edits = check_edits(vlm, edits)
    M = len(ctx)

    def rows(i: int, s: Sample) -> list[Context]:
        out: list[Context] = [
            (_compose(s.question, c.image, f"{s.id}|gq{j}"), FULL) for j, c in enumerate(ctx)
        ]
        out += [(_compose(c.question, c.image, f"{s.id}|gp{j}"), FULL) for j, c in enumerate(ctx)]
        return out

    lps = _measure(
        vlm,
        samples,
        drives.token_ids,
        rows,
        name="recovery",
        settings={"contexts": [c.fingerprint() for c in ctx]},
        edits=edits,
        batch_size=batch_size,
        store=_substore(store, "recovery"),
        overwrite=overwrite,
        shard=shard,
        progress_bar=progress_bar,
    )
    logw = -math.log(M)
    width = drives.mask.shape[1]
    g_q, g_p = [], []
    for i, lp in enumerate(lps):
        p0 = drives.p0[i, : lp.shape[1]] * LN2
        g_q.append((_logsumexp(np.cumsum(lp[:M], axis=1) + logw) - p0) / LN2)
        g_p.append((_logsumexp(lp[M:] + logw) - p0) / LN2)
    gq, gp = _pad(g_q, width), _pad(g_p, width)
    errors = {
        "qcd": np.abs(drives.qcd - gq),
        "pmi_q": np.abs(drives.pmi_q - gq),
        "pcd": np.abs(drives.pcd - gp),
        "pmi_p": np.abs(drives.pmi_p - gp),
    }
    return Recovery(
        list(drives.sample_ids),
        gq,
        gp,
        errors,
        drives.mask.copy(),
        [str(c.id) for c in ctx],
        drives.k,
    )


# -- trajectory clusters (Fig. 3, Supplementary Sec. 11) --------------------------------------------


@dataclass
class DriveClusters:
    """k-means clusters of the binned drive trajectories.

    Attributes:
        labels: cluster of each sample, 0-based (0 = the largest); the frames and figures number
            clusters from 1.
        profiles: each cluster's mean trajectories ``[k, 3, bins]`` in bits, drives in the order
            (QCD, VCD, PCD).
        features: the samples' 30-dimensional (for 10 bins) vectors before standardisation.
    """

    sample_ids: list[str]
    labels: Int[np.ndarray, " n"]
    profiles: Float[np.ndarray, "k three bins"]
    features: Float[np.ndarray, "n d"]
    sizes: Int[np.ndarray, " k"]
    inertia: float

    @property
    def k(self) -> int:
        return len(self.sizes)

    @property
    def bins(self) -> int:
        return int(self.profiles.shape[2])

    @property
    def shares(self) -> Float[np.ndarray, " k"]:
        return self.sizes / self.sizes.sum()

    def to_frame(self) -> pd.DataFrame:
        """Per cluster: size, share, and each drive's mean over the first three bins (early),
        the last three (late) and all bins."""
        rows = []
        third = max(1, self.bins * 3 // 10)
        for c in range(self.k):
            row: dict[str, Any] = {
                "cluster": c + 1,
                "n": int(self.sizes[c]),
                "share": self.shares[c],
            }
            for d, name in enumerate(DRIVES):
                prof = self.profiles[c, d]
                row[f"{name}_early"] = float(prof[:third].mean())
                row[f"{name}_late"] = float(prof[-third:].mean())
                row[f"{name}_mean"] = float(prof.mean())
            rows.append(row)
        return pd.DataFrame(rows)

    def sample_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"sample_id": self.sample_ids, "cluster": self.labels + 1})


def cluster_drives(
    drives: CausalDrives, k: int = 3, *, bins: int = 10, seed: int = 0, n_init: int = 10
) -> DriveClusters:
    """Cluster generations by their drive trajectories (Sec. 5.2, Supplementary Sec. 11):
    z_i = [QCD_{i,1:10}, VCD_{i,1:10}, PCD_{i,1:10}] (relative-position bins), standardised per
    dimension, k-means with ``k`` clusters (scikit-learn, ``n_init`` restarts, ``seed``).

    Raises:
        TooFewSamplesError: fewer samples than clusters.
    """
    from probes.trajectories import kmeans

    feats = drives.features(bins)
    fit = kmeans(feats, k, seed=seed, n_init=n_init)
    return DriveClusters(
        sample_ids=list(drives.sample_ids),
        labels=fit.labels,
        profiles=fit.profiles.reshape(k, len(DRIVES), bins),
        features=feats,
        sizes=fit.sizes,
        inertia=fit.inertia,
    )


# -- prefix-visual imbalance (Sec. 5.5, Table 4, Supplementary Sec. 12) ------------------------------


@dataclass
class Imbalance:
    """How well S_PV (and answer-level VCD) separate prior-driven from grounded generations.

    Attributes:
        scores: per labelled sample: ``sample_id``, ``label``, ``positive`` (bool), ``s_pv``,
            ``mean_pcd``, ``mean_vcd``, ``answer_vcd``.
        table: per score, AUROC and AUPRC with bootstrap CIs (the score oriented so that a
            larger value predicts the positive label: S_PV, −answer-level VCD, −mean VCD).
        effects: per score, the group means, their difference with a CI, Cohen's d and Cliff's
            delta with CIs (positive minus negative group, unoriented values).
    """

    scores: pd.DataFrame
    table: pd.DataFrame
    effects: pd.DataFrame
    positive: str = "prior_driven"
    negative: str = "grounded"

    def to_frame(self) -> pd.DataFrame:
        return self.table.merge(self.effects, on="score")


IMBALANCE_SCORES: tuple[tuple[str, str, float], ...] = (
    ("S_PV", "s_pv", 1.0),
    ("answer-level VCD", "answer_vcd", -1.0),
    ("mean VCD", "mean_vcd", -1.0),
)


def prefix_visual_imbalance(
    drives: CausalDrives,
    labels: Sequence[Any],
    *,
    positive: str = "prior_driven",
    negative: str = "grounded",
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> Imbalance:
    """S_PV = mean_t PCD − mean_t VCD (Sec. 5.5) as a score for ``positive`` (prior-driven) vs
    ``negative`` (visually grounded) generations: AUROC and AUPRC with percentile bootstrap CIs
    (stratified by label), Cohen's d and Cliff's delta (Table 4, Supplementary Sec. 12); the
    same for answer-level VCD (VCD_T, the whole answer) and mean VCD, where *lower* visual drive
    predicts prior-driven. Samples with other labels (``other``, None) are left out.

    Raises:
        DriveError: not one label per sample.
        EmptyGroupError / TooFewSamplesError: fewer than two samples in a group.
    """
    from probes.stats import auprc, auroc, cliffs_delta, cohens_d, mean_difference

    labels = list(labels)
    if len(labels) != len(drives):
        raise DriveError(f"{len(labels)} labels for {len(drives)} samples; give one per sample")
    keep = np.array([lab in (positive, negative) for lab in labels])
    frame = drives.sample_frame()
    frame["label"] = labels
    scores = frame.loc[keep, ["sample_id", "label", "s_pv", "mean_pcd", "mean_vcd", "answer_vcd"]]
    scores = scores.reset_index(drop=True)
    scores.insert(2, "positive", scores["label"] == positive)
    y = scores["positive"].to_numpy()
    for name, n_group in ((positive, int(y.sum())), (negative, int((~y).sum()))):
        if n_group < 2:
            raise TooFewSamplesError(
                f"{n_group} samples labelled {name!r}; AUROC and effect sizes need at least 2 in "
                "each group (label more samples)"
            )
    table, effects = [], []
    for title, column, sign in IMBALANCE_SCORES:
        x = scores[column].to_numpy(dtype=np.float64)
        roc = auroc(sign * x, y, ci=ci, n_boot=n_boot, seed=seed)
        prc = auprc(sign * x, y, ci=ci, n_boot=n_boot, seed=seed)
        table.append(
            {
                "score": title,
                "auroc": roc.value,
                "auroc_low": roc.low,
                "auroc_high": roc.high,
                "auprc": prc.value,
                "auprc_low": prc.low,
                "auprc_high": prc.high,
                "positive_rate": float(y.mean()),
                "n_positive": int(y.sum()),
                "n_negative": int((~y).sum()),
            }
        )
        a, b = x[y], x[~y]
        diff = mean_difference(a, b, ci=ci, n_boot=n_boot, seed=seed)
        d = cohens_d(a, b, ci=ci, n_boot=n_boot, seed=seed)
        delta = cliffs_delta(a, b, ci=ci, n_boot=n_boot, seed=seed)
        effects.append(
            {
                "score": title,
                f"mean_{positive}": float(a.mean()),
                f"mean_{negative}": float(b.mean()),
                "difference": diff.value,
                "difference_low": diff.low,
                "difference_high": diff.high,
                "cohens_d": d.value,
                "cohens_d_low": d.low,
                "cohens_d_high": d.high,
                "cliffs_delta": delta.value,
                "cliffs_delta_low": delta.low,
                "cliffs_delta_high": delta.high,
            }
        )
    return Imbalance(scores, pd.DataFrame(table), pd.DataFrame(effects), positive, negative)


# -- sensitivity to the null sources (Supplementary Sec. 10) -----------------------------------------


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


@dataclass
class Sensitivity:
    """The drives under other null sources, next to the base setting.

    Attributes:
        base: the drives under the base null image and question.
        variants: ``"<null image> | <null question>"`` → the drives under that setting.
    """

    base: CausalDrives
    variants: dict[str, CausalDrives]

    def to_frame(self) -> pd.DataFrame:
        """Per setting (base first): each drive's mean over all answer tokens, and its agreement
        with the base setting — the mean over samples of the sample-wise Pearson r between the
        two trajectories (samples with fewer than 2 tokens or a constant trajectory left out), and
        the Pearson r over all tokens pooled."""
        rows = []
        mask = self.base.mask
        for label, dr in {"base": self.base, **self.variants}.items():
            row: dict[str, Any] = {
                "setting": label,
                "null_image": dr.null_image,
                "null_question": dr.null_question or "(empty)",
            }
            for name in DRIVES:
                mine, base = dr.drive(name), self.base.drive(name)
                row[f"mean_{name}"] = float(mine[mask].mean())
                r = [_pearson(mine[i, mask[i]], base[i, mask[i]]) for i in range(len(self.base))]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    row[f"r_{name}"] = float(np.nanmean(r)) if not np.all(np.isnan(r)) else np.nan
                row[f"r_pooled_{name}"] = _pearson(mine[mask], base[mask])
            rows.append(row)
        return pd.DataFrame(rows)


def drive_sensitivity(
    vlm: VLM,
    samples: Sequence[Sample],
    base: CausalDrives,
    *,
    null_images: Sequence[str] = ("black", "mismatched"),
    null_questions: Sequence[str] = (NEUTRAL_PROMPT,),
    edits: Sequence[Intervention] | None = None,
    batch_size: int = 32,
    store: str | Path | None = None,
    overwrite: bool = False,
    progress_bar: bool = True,
) -> Sensitivity:
    """Reference and prompt sensitivity (Supplementary Sec. 10): the drives with V = ∅ replaced
    by each of ``null_images`` (the base null question kept), and with Q = ∅ replaced by each of
    ``null_questions`` (the base null image kept). Only P0 and VCD's context change, so each
    setting costs 2 forwards per sample; PCD and QCD keep their numerators (re-referenced to the
    new P0) and PMI_Q its full-input term.

    Raises:
        DriveError: other samples than the base's; ConditionError: an unknown null image.
    """
    from interp.edits import check_edits

    samples = ensure_samples(samples)
    _check_matches(samples, base)
    from interp.encoding import warn_unknown_tokens

    settings = [(_null_image_name(n), base.null_question) for n in null_images]
    for q in null_questions:
        _question_part(q)
        settings.append((base.null_image, q.strip()))
        if q.strip():
            warn_unknown_tokens(vlm, [Sample(q.strip())])
    settings = [s for s in dict.fromkeys(settings) if s != (base.null_image, base.null_question)]
    _check_common(batch_size, 1)
    edits = check_edits(vlm, edits)
    if any(n == "mismatched" for n, _ in settings):
        partners = _mismatched_partners(samples)
    else:
        partners = None
    variants: dict[str, CausalDrives] = {}
    width = base.mask.shape[1]
    base_vcd_num = (base.vcd + base.p0) * LN2  # cumulative natural-log VCD numerator
    base_vcd_tok = np.diff(np.nan_to_num(base_vcd_num), axis=1, prepend=0.0)
    for nimg, nq in settings:
        qpart = _question_part(nq)

        def contexts(i: int, s: Sample, qpart: Part = qpart, nimg: str = nimg) -> list[Context]:
            return [
                (_compose(s.question, s.image, f"{s.id}|vcd"), Condition(Part("full"), qpart)),
                _null_context(s, i, samples, nimg, qpart, partners, "p0"),
            ]

        extras = None if nimg != "mismatched" else [samples[j].fingerprint() for j in partners]  # type: ignore[union-attr]
        lps = _measure(
            vlm,
            samples,
            base.token_ids,
            contexts,
            name="drive_sensitivity",
            settings={"null_image": nimg, "null_question": nq},
            extras=extras,
            edits=edits,
            batch_size=batch_size,
            store=_substore(store, f"sensitivity-{nimg}-{stable_seed(nq):08x}"),
            overwrite=overwrite,
            shard=None,
            progress_bar=progress_bar,
        )
        p0 = _pad([np.cumsum(lp[1]) / LN2 for lp in lps], width)
        vcd_num = _pad([np.cumsum(lp[0]) / LN2 for lp in lps], width)
        vcd_tok = _pad([lp[0] for lp in lps], width)
        shift = base.p0 - p0
        pmi_q = None
        if base.pmi_q is not None:
            pmi_q = base.pmi_q + (base_vcd_tok - vcd_tok) / LN2
        variants[f"{nimg} | {nq or '(empty)'}"] = CausalDrives(
            sample_ids=list(base.sample_ids),
            token_ids=base.token_ids,
            tokens=base.tokens,
            answers=base.answers,
            p0=p0,
            pcd=base.pcd + shift,
            qcd=base.qcd + shift,
            vcd=vcd_num - p0,
            mask=base.mask.copy(),
            pmi_q=pmi_q,
            pmi_p=base.pmi_p,
            support_ids=list(base.support_ids),
            null_image=nimg,
            null_question=nq,
            forwards_per_sample=2,
        )
    return Sensitivity(base, variants)


# -- figures ---------------------------------------------------------------------------------------

COLORS = {
    "qcd": "#1f77b4",
    "vcd": "#2ca02c",
    "pcd": "#d62728",
    "pmi_q": "#7f7f7f",
    "pmi_p": "#7f7f7f",
}
NAMES = {"qcd": "QCD", "vcd": "VCD", "pcd": "PCD", "pmi_q": "PMI$_Q$", "pmi_p": "PMI$_P$"}


def _mean_band(
    ax: Any, values: Float[np.ndarray, "n bins"], color: str, label: str, **kw: Any
) -> None:
    """Mean over rows per bin with a normal-approximation 95% band (± 1.96 standard errors)."""
    values = np.asarray(values, dtype=np.float64)
    x = (np.arange(values.shape[1]) + 0.5) / values.shape[1]
    mean = values.mean(axis=0)
    se = values.std(axis=0, ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0 * mean
    ax.plot(x, mean, color=color, label=label, lw=2, **kw)
    ax.fill_between(x, mean - 1.96 * se, mean + 1.96 * se, color=color, alpha=0.2)


def plot_trajectories(drives: CausalDrives, *, bins: int = 10, title: str | None = None) -> Figure:
    """Fig. 2: mean QCD, VCD and PCD over the relative decoding position (``bins`` bins), with
    95% bands of the mean over samples."""
    import matplotlib.pyplot as plt

    b = drives.binned(bins)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for d, name in enumerate(DRIVES):
        _mean_band(ax, b[:, d], COLORS[name], NAMES[name])
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("relative decoding position")
    ax.set_ylabel("drive (bits)")
    ax.set_title(title or f"causal drives (n={len(drives)}, K={drives.k})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_clusters(clusters: DriveClusters, *, title: str | None = None) -> Figure:
    """Fig. 3: each cluster's mean PCD, QCD and VCD trajectory (one panel per drive), labelled
    with the cluster's share of the generations."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    x = (np.arange(clusters.bins) + 0.5) / clusters.bins
    palette = plt.get_cmap("tab10")
    for ax, name in zip(axes, ("pcd", "qcd", "vcd")):
        d = DRIVES.index(name)
        for c in range(clusters.k):
            ax.plot(
                x,
                clusters.profiles[c, d],
                color=palette(c),
                lw=2,
                label=f"cluster {c + 1} ({100 * clusters.shares[c]:.0f}%)",
            )
        ax.axhline(0, color="k", lw=0.6)
        ax.set_title(NAMES[name], fontsize=10)
        ax.set_xlabel("relative decoding position")
    axes[0].set_ylabel("drive (bits)")
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_recovery(recovery: Recovery, *, bins: int = 10) -> Figure:
    """Fig. 5: |D(t) − G(t)| over the relative decoding position for the drive and its PMI
    baseline, question (QCD vs PMI_Q) and prefix (PCD vs PMI_P) interventions, with 95% bands."""
    import matplotlib.pyplot as plt

    b = recovery.binned(bins)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.3))
    for ax, (title, drive, base) in zip(
        axes, (("question", "qcd", "pmi_q"), ("prefix", "pcd", "pmi_p"))
    ):
        _mean_band(ax, b[drive], COLORS[drive], NAMES[drive])
        _mean_band(ax, b[base], COLORS[base], NAMES[base], ls="--")
        ax.set_title(f"{title} intervention (M={recovery.m})", fontsize=10)
        ax.set_xlabel("relative decoding position")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("recovery error |D − G| (bits)")
    fig.tight_layout()
    return fig


def plot_imbalance(imbalance: Imbalance) -> Figure:
    """S_PV of prior-driven vs grounded generations (histograms) and the ROC curves of S_PV and
    of answer-level VCD (negated: lower visual drive predicts prior-driven)."""
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_curve

    s = imbalance.scores
    y = s["positive"].to_numpy()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    edges = np.histogram_bin_edges(s["s_pv"], bins=15)
    for flag, name, color in (
        (True, imbalance.positive, "#d62728"),
        (False, imbalance.negative, "#1f77b4"),
    ):
        left.hist(
            s.loc[y == flag, "s_pv"],
            bins=edges,
            alpha=0.55,
            color=color,
            label=f"{name} (n={int((y == flag).sum())})",
        )
    left.set_xlabel("$S_{PV}$ = mean PCD − mean VCD (bits)")
    left.set_ylabel("generations")
    left.legend(fontsize=8)
    table = imbalance.table.set_index("score")
    for title, column, sign in IMBALANCE_SCORES[:2]:
        fpr, tpr, _ = roc_curve(y, sign * s[column].to_numpy())
        right.plot(fpr, tpr, lw=2, label=f"{title} (AUROC {table.loc[title, 'auroc']:.3f})")
    right.plot([0, 1], [0, 1], color="k", lw=0.6, ls=":")
    right.set_xlabel("false positive rate")
    right.set_ylabel("true positive rate")
    right.set_title(f"{imbalance.positive} vs {imbalance.negative}", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_source_removal(removal: SourceRemoval, *, bins: int = 10) -> Figure:
    """Fig. 4: mean token probability of the fixed answers over the relative decoding position,
    under the full input and with Q, V or the prefix removed."""
    import matplotlib.pyplot as plt

    b = removal.binned(bins)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    styles = {
        "full": ("k", "full"),
        "no_question": (COLORS["qcd"], "without Q"),
        "no_image": (COLORS["vcd"], "without V"),
        "no_prefix": (COLORS["pcd"], "without $A_{<t}$"),
    }
    for key, (color, label) in styles.items():
        _mean_band(ax, b[key], color, label)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("relative decoding position")
    ax.set_ylabel("mean token probability")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# -- the command -----------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> tuple[list[Sample], Path]:
    """Everything checked before the model is loaded, cheapest first: the common options, ``--k``
    >= 1, ``--m`` >= 0, ``--max-new-tokens`` >= 1, ``--null-image``, ``--null-question``,
    ``--clusters`` >= 1, ``--out`` is (or can become) a writable folder, the model's
    configuration, the data (every image opened, every sample with an image), K and M against the
    number of samples, and ``--labels``. The output folder is created last."""
    check_common_arguments(args, one_process="interp drives")
    if args.k < 1:
        raise UsageError(f"--k must be >= 1 (the support size K), got {args.k}")
    if args.m < 0:
        raise UsageError(
            f"--m must be >= 0 (held-out contexts; 0 skips the recovery), got {args.m}"
        )
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if args.clusters < 1:
        raise UsageError(f"--clusters must be >= 1, got {args.clusters}")
    _null_image_name(args.null_image)
    _question_part(args.null_question)
    check_output_dir(args.out, create=False)
    check_model(args.model)
    samples = load_data(
        args.data, args.n, args.seed, default_qtypes=DEFAULT_QTYPES, columns=args.columns
    )
    _check_images(samples)
    if args.k > len(samples):
        raise SupportError(
            f"--k {args.k} is larger than the {len(samples)} samples the support is drawn from; "
            "lower --k or raise --n"
        )
    if args.m > len(samples) - args.k:
        raise SupportError(
            f"--m {args.m} held-out contexts asked, but only {len(samples) - args.k} samples lie "
            f"outside the support of K={args.k}; lower --m (0 skips the recovery) or raise --n"
        )
    if args.clusters > len(samples):
        raise UsageError(f"--clusters {args.clusters} is more than the {len(samples)} samples")
    if args.labels is not None:
        check_label(samples, args.labels, "--labels")
    out = check_output_dir(args.out)
    return samples, out


def _labels(samples: Sequence[Sample], texts: Sequence[str], key: str | None) -> list[Any] | None:
    """Prior-driven / grounded labels: a ``meta`` key, or for demo-world samples the label of the
    generated answer (:func:`interp.datasets.generation_label`)."""
    if key is not None:
        return [s.meta.get(key) for s in samples]
    if all("qtype" in s.meta and "counterfactual" in s.meta for s in samples):
        from interp.datasets import generation_label

        return [generation_label(t, s.meta) for t, s in zip(texts, samples)]
    return None


def _drives_command(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from interp.model import load

    samples, out = _validate(args)
    vlm = load(args.model)
    print(f"{vlm}\n{len(samples)} samples from {args.data!r}", flush=True)
    common = {
        "batch_size": args.batch_size,
        "store": out / "store",
        "overwrite": args.overwrite,
        "progress_bar": not args.no_progress,
    }
    result = causal_drives(
        vlm,
        samples,
        k=args.k,
        null_image=args.null_image,
        null_question=args.null_question,
        seed=args.support_seed,
        max_new_tokens=args.max_new_tokens,
        **common,
    )
    removal = source_removal(
        vlm,
        samples,
        targets=result.token_ids,
        null_image=args.null_image,
        null_question=args.null_question,
        **common,
    )
    lines = [
        f"model {args.model!r}, data {args.data!r}: {len(samples)} generations, K = {result.k} "
        f"support contexts, {result.forwards_per_sample} teacher-forced forwards per sample",
        f"null image {result.null_image!r}, null question {result.null_question or '(empty)'!r}",
        "",
        "mean drives over relative decoding position (bits):",
        result.mean_trajectories().round(3).to_string(index=False),
        "",
        "source removal (Table 3):",
        removal.to_frame().round(4).to_string(index=False),
    ]
    result.to_frame().to_csv(out / "tokens.csv", index=False)
    per = result.sample_frame()
    removal.to_frame().to_csv(out / "source_removal.csv", index=False)
    plot_trajectories(result).savefig(out / "trajectories.png", dpi=130)
    plot_source_removal(removal).savefig(out / "source_removal.png", dpi=130)
    if args.m > 0:
        rec = recovery_error(vlm, samples, result, m=args.m, seed=args.support_seed + 1, **common)
        rec.to_frame().to_csv(out / "recovery.csv", index=False)
        plot_recovery(rec).savefig(out / "recovery.png", dpi=130)
        lines += [
            "",
            "randomized-intervention recovery (Eq. 15):",
            rec.to_frame().round(4).to_string(index=False),
        ]
    clusters = cluster_drives(result, k=min(args.clusters, len(result)), seed=args.support_seed)
    clusters.to_frame().to_csv(out / "clusters.csv", index=False)
    per["cluster"] = clusters.labels + 1
    plot_clusters(clusters).savefig(out / "clusters.png", dpi=130)
    lines += [
        "",
        f"k-means clusters of the trajectories (k = {clusters.k}):",
        clusters.to_frame().round(3).to_string(index=False),
    ]
    labels = _labels(samples, result.answers, args.labels)
    if labels is not None:
        per["label"] = labels
        try:
            imb = prefix_visual_imbalance(result, labels, seed=args.support_seed)
        except (DriveError, ValueError) as err:
            lines += ["", f"S_PV validation skipped: {err}"]
        else:
            imb.to_frame().to_csv(out / "imbalance.csv", index=False)
            plot_imbalance(imb).savefig(out / "imbalance.png", dpi=130)
            lines += [
                "",
                "S_PV validation, prior-driven vs grounded (Table 4):",
                imb.table.round(3).to_string(index=False),
            ]
    per.to_csv(out / "samples.csv", index=False)
    plt.close("all")
    text = "\n".join(lines)
    write_summary(out, text)
    return 0


def register(sub: Any) -> None:
    """Add ``drives`` to the ``interp`` command."""
    d = sub.add_parser(
        "drives",
        help="temporal causal drives (QCD, VCD, PCD) of each generated token",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(d, data_help=DEMO_HELP + " (default question type for demo: describe)")
    d.add_argument("--k", type=int, default=20, help="support size K (default 20)")
    d.add_argument(
        "--m",
        type=int,
        default=20,
        help="held-out contexts of the randomized-intervention recovery (the paper: 100; 0 skips)",
    )
    d.add_argument("--support-seed", type=int, default=0, help="seed of the support draw")
    d.add_argument("--null-image", default="blind", choices=list(NULL_IMAGES) + ["none"])
    d.add_argument(
        "--null-question",
        default="",
        help=f"Q = ∅: '' (empty) or a prompt such as {NEUTRAL_PROMPT!r}",
    )
    d.add_argument("--clusters", type=int, default=3, help="k of the trajectory k-means")
    d.add_argument(
        "--labels",
        default=None,
        help="meta label with prior_driven / grounded values for the S_PV validation (demo data: "
        "labelled from the generated answers)",
    )
    d.add_argument("--max-new-tokens", type=int, default=24)
    d.set_defaults(func=_drives_command)


__all__ = [
    "DRIVES",
    "NEUTRAL_PROMPT",
    "NULL_IMAGES",
    "CausalDrives",
    "DriveClusters",
    "Imbalance",
    "Recovery",
    "Sensitivity",
    "SourceRemoval",
    "causal_drives",
    "cluster_drives",
    "draw_support",
    "drive_contexts",
    "drive_sensitivity",
    "plot_clusters",
    "plot_imbalance",
    "plot_recovery",
    "plot_source_removal",
    "plot_trajectories",
    "prefix_visual_imbalance",
    "recovery_error",
    "register",
    "score_contexts",
    "source_removal",
]
