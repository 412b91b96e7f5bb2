"""The result of :func:`~interp.studies.drives.causal_drives`: per-token drives in bits, with
their per-token and per-sample tables and the binned trajectories."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from jaxtyping import Bool, Float, Int

from interp.errors import DriveError
from interp.reprs import Summary
from probes.trajectories import relative_bins

from .constants import DRIVE_ALIASES, DRIVES


@dataclass(repr=False)
class CausalDrives(Summary):
    """Per-token causal drives of N generations, in bits (log base 2).

    Every array is ``[N, T]`` with T the longest target; ``mask`` is True for the first
    ``len(token_ids[i])`` entries of row i, and entries past a target's end are NaN.

    Attributes:
        p0: log2 P0(a≤t), the cumulative null-source log-likelihood (Eq. 4).
        prefix_drive: the paper's Prefix Causal Drive PCD (Eq. 6), token-level numerator over
            the cumulative P0.
        question_drive: the Question Causal Drive QCD (Eqs. 9-11).
        visual_drive: the Visual Causal Drive VCD (Eq. 14; not visual contrastive decoding).
        pmi_q, pmi_p: the PMI baselines of Eqs. 24 and 25 (None when not computed); ``pmi_q``'s
            denominator is P(a_t | a_<t, v, Q = ∅), the null question standing for "not
            conditioned on Q".
        pmi_q_marginal: Eq. 24 with its denominator as the paper writes it, P(a_t | a_<t, v),
            the question marginalised over the support's questions given the prefix
            (``pmi_marginal=True``; None otherwise).
        sample_ids, token_ids, tokens, answers: the targets.
        support_ids: the ids of the K support samples.
        null_image, null_question: what V = ∅ and Q = ∅ were.
        visual: what V was: ``"image"`` or ``"video"``.
        forwards_per_sample: teacher-forced forwards each sample cost (2K + 2, + 2 with PMI).

    The paper's symbols ``pcd``, ``qcd``, ``vcd`` still work (deprecated) as attributes and
    wherever a drive is named (:meth:`drive`, :meth:`sample_mean`, :meth:`final`).
    """

    sample_ids: list[str]
    token_ids: list[list[int]]
    tokens: list[list[str]]
    answers: list[str]
    p0: Float[np.ndarray, "n t"]
    prefix_drive: Float[np.ndarray, "n t"]
    question_drive: Float[np.ndarray, "n t"]
    visual_drive: Float[np.ndarray, "n t"]
    mask: Bool[np.ndarray, "n t"]
    pmi_q: Float[np.ndarray, "n t"] | None = None
    pmi_p: Float[np.ndarray, "n t"] | None = None
    support_ids: list[str] = field(default_factory=list)
    null_image: str = "blind"
    null_question: str = ""
    forwards_per_sample: int = 0
    visual: str = "image"
    pmi_q_marginal: Float[np.ndarray, "n t"] | None = None

    def _repr_head(self) -> dict[str, Any]:
        return {
            "n": len(self),
            "tokens": int(self.mask.sum()),
            "support": self.k,
            "visual": self.visual,
        }

    def __len__(self) -> int:
        return len(self.sample_ids)

    @property
    def k(self) -> int:
        """The support size K."""
        return len(self.support_ids)

    @property
    def lengths(self) -> Int[np.ndarray, " n"]:
        return self.mask.sum(axis=1).astype(np.int64)

    @property
    def pcd(self) -> Float[np.ndarray, "n t"]:
        """Deprecated: :attr:`prefix_drive`."""
        return self.drive("pcd")

    @property
    def qcd(self) -> Float[np.ndarray, "n t"]:
        """Deprecated: :attr:`question_drive`."""
        return self.drive("qcd")

    @property
    def vcd(self) -> Float[np.ndarray, "n t"]:
        """Deprecated: :attr:`visual_drive` (the drives paper's VCD)."""
        return self.drive("vcd")

    def drive(self, name: str) -> Float[np.ndarray, "n t"]:
        """One of ``p0``, ``question_drive``, ``visual_drive``, ``prefix_drive``, ``pmi_q``,
        ``pmi_p``, ``pmi_q_marginal`` (the paper's ``qcd``, ``vcd``, ``pcd``: deprecated names of
        the drives)."""
        if name in DRIVE_ALIASES:
            warnings.warn(
                f"the drive {name!r} is now called {DRIVE_ALIASES[name]!r}",
                DeprecationWarning,
                stacklevel=3,
            )
            name = DRIVE_ALIASES[name]
        names = ("p0", *DRIVES, "pmi_q", "pmi_p", "pmi_q_marginal")
        value = getattr(self, name, None) if name in names else None
        if value is None:
            have = ", ".join(n for n in names if getattr(self, n) is not None)
            raise DriveError(f"no drive {name!r} in this result; available: {have}")
        return value

    def sample_mean(self, name: str) -> Float[np.ndarray, " n"]:
        """Mean over each answer's tokens of one drive."""
        return np.nanmean(np.where(self.mask, self.drive(name), np.nan), axis=1)

    def final(self, name: str) -> Float[np.ndarray, " n"]:
        """A drive at each answer's last token: for the cumulative question and visual drives
        the whole-answer (answer-level) drive."""
        values = self.drive(name)
        return values[np.arange(len(self)), self.lengths - 1]

    @property
    def s_pv(self) -> Float[np.ndarray, " n"]:
        """Prefix-visual imbalance S_PV = mean_t PCD − mean_t VCD per sample (Sec. 5.5): the mean
        prefix drive minus the mean visual drive."""
        return self.sample_mean("prefix_drive") - self.sample_mean("visual_drive")

    def binned(self, bins: int = 10) -> Float[np.ndarray, "n three bins"]:
        """The drives (question, visual, prefix: :data:`DRIVES`) averaged in ``bins`` equal bins of the relative decoding position
        (:func:`probes.trajectories.relative_bins`; Supplementary Sec. 11)."""
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
            prefix_drive=cut(self.prefix_drive),  # type: ignore[arg-type]
            question_drive=cut(self.question_drive),  # type: ignore[arg-type]
            visual_drive=cut(self.visual_drive),  # type: ignore[arg-type]
            mask=self.mask[idx, :width],
            pmi_q=cut(self.pmi_q),
            pmi_p=cut(self.pmi_p),
            support_ids=list(self.support_ids),
            null_image=self.null_image,
            null_question=self.null_question,
            forwards_per_sample=self.forwards_per_sample,
            visual=self.visual,
            pmi_q_marginal=cut(self.pmi_q_marginal),
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per answer token: ``sample_id``, ``t`` (1-based), ``n_tokens``, ``position``
        (relative, (t − 0.5)/T), ``token_id``, ``token``, ``p0``, ``question_drive``,
        ``visual_drive``, ``prefix_drive`` and, when computed, ``pmi_q``, ``pmi_p`` (bits)."""
        pmis = ("pmi_q", "pmi_p", "pmi_q_marginal")
        names = ["p0", *DRIVES] + [n for n in pmis if getattr(self, n) is not None]
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
        """One row per sample: the answer, its length, each drive's mean over the answer
        (``mean_question_drive``, ...), the answer-level (last-token) question and visual drives
        (``answer_question_drive``, ``answer_visual_drive``), and S_PV."""
        frame = pd.DataFrame(
            {
                "sample_id": self.sample_ids,
                "answer": self.answers,
                "n_tokens": self.lengths,
                **{f"mean_{d}": self.sample_mean(d) for d in DRIVES},
                "answer_question_drive": self.final("question_drive"),
                "answer_visual_drive": self.final("visual_drive"),
                "s_pv": self.s_pv,
            }
        )
        for name in ("pmi_q", "pmi_p", "pmi_q_marginal"):
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


__all__ = [
    "CausalDrives",
]
