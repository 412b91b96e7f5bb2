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

In code, tables and figures the three drives are named ``question_drive`` (QCD), ``visual_drive``
(VCD — the paper's Visual Causal Drive, not visual contrastive decoding, the ``vcd`` method of
:mod:`interventions.decoding`) and ``prefix_drive`` (PCD); the symbols ``qcd``, ``vcd``, ``pcd`` are
still taken, deprecated, where a drive is named (``CausalDrives.sample_mean("vcd")``).

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

**Video.** With ``visual="video"`` (``--visual video``) V is the sample's video instead: the
support pairs are (video, question), and V = ∅ is ``"blind"`` (``no_video``), ``"black"`` /
``"mean"`` (``null_video`` frames of each video's shape) or ``"mismatched"`` (another sample's
video); ``"white"`` and ``"noise"`` have no video counterpart and are refused.
:func:`drive_sensitivity` and :func:`recovery_error` follow the drives' ``visual``: their
null videos and held-out contexts are videos too.

Entry points: :func:`causal_drives` (→ :class:`CausalDrives`), :func:`source_removal` (Table 3),
:func:`recovery_error` (Eq. 15, Fig. 5), :func:`cluster_drives` (Fig. 3, Supplementary Sec. 11),
:func:`prefix_visual_imbalance` (S_PV, Table 4, Supplementary Sec. 12), :func:`drive_sensitivity`
(Supplementary Sec. 10), :func:`drive_profiles` (Fig. 2's normalised profiles) and
:func:`support_stability` (stability over K, Supplementary Sec. 9.1), the figures ``plot_*``, and
the command ``interp drives``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp._lazy import lazy_exports
from interp.study_registry import StudyEntry

ENTRY = StudyEntry(
    "drives",
    "Temporal causal drives",
    "which source drives each generated token",
    audit=".audit:STUDY",
    recipe="interp.studies.reproduce.recipes:DRIVES",
    docs="docs/drives.md",
    notebook="notebooks/03_drives_temporal_causal.ipynb",
    bench="bench/drives.py",
    order=6,
)
"""This study in the study registry (:mod:`interp.study_registry`)."""


_LAZY = {
    "DRIVES": "contexts",
    "DRIVE_ALIASES": "contexts",
    "NEUTRAL_PROMPT": "contexts",
    "NULL_IMAGES": "contexts",
    "draw_support": "contexts",
    "drive_contexts": "contexts",
    "CausalDrives": "result",
    "causal_drives": "measure",
    "score_contexts": "measure",
    "SourceRemoval": "removal",
    "source_removal": "removal",
    "Recovery": "recovery",
    "recovery_error": "recovery",
    "DriveClusters": "analysis",
    "Imbalance": "analysis",
    "cluster_drives": "analysis",
    "prefix_visual_imbalance": "analysis",
    "Sensitivity": "sensitivity",
    "drive_sensitivity": "sensitivity",
    "DriveProfiles": "profiles",
    "drive_profiles": "profiles",
    "normalised_shares": "profiles",
    "support_stability": "profiles",
    "plot_profiles": "figures",
    "plot_clusters": "figures",
    "plot_imbalance": "figures",
    "plot_recovery": "figures",
    "plot_source_removal": "figures",
    "plot_trajectories": "figures",
    "register": "cli",
    # not public: the audit's drives section labels the answers as the command does
    "_labels": "report",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from .analysis import DriveClusters, Imbalance, cluster_drives, prefix_visual_imbalance
    from .cli import register
    from .contexts import (
        DRIVE_ALIASES,
        DRIVES,
        NEUTRAL_PROMPT,
        NULL_IMAGES,
        draw_support,
        drive_contexts,
    )
    from .figures import (
        plot_clusters,
        plot_imbalance,
        plot_profiles,
        plot_recovery,
        plot_source_removal,
        plot_trajectories,
    )
    from .measure import causal_drives, score_contexts
    from .profiles import DriveProfiles, drive_profiles, normalised_shares, support_stability
    from .recovery import Recovery, recovery_error
    from .removal import SourceRemoval, source_removal
    from .result import CausalDrives
    from .sensitivity import Sensitivity, drive_sensitivity

__all__ = [
    "CausalDrives",
    "DRIVES",
    "DRIVE_ALIASES",
    "DriveClusters",
    "DriveProfiles",
    "Imbalance",
    "NEUTRAL_PROMPT",
    "NULL_IMAGES",
    "Recovery",
    "Sensitivity",
    "SourceRemoval",
    "causal_drives",
    "cluster_drives",
    "draw_support",
    "drive_contexts",
    "drive_profiles",
    "drive_sensitivity",
    "plot_clusters",
    "plot_imbalance",
    "plot_profiles",
    "plot_recovery",
    "plot_source_removal",
    "plot_trajectories",
    "prefix_visual_imbalance",
    "recovery_error",
    "register",
    "score_contexts",
    "source_removal",
    "support_stability",
    "normalised_shares",
]
