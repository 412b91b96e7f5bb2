"""Training-free decoding that weighs the image against the language prior: contrastive decoding.

At every generated token t the model's next-token logits on the input ``x`` (the *expert*, ``z``)
are contrasted with its logits on a degraded input ``x'`` (the *amateur*, ``z'``: the image
distorted, removed, or the prompt disturbed), so tokens the model would predict without looking
at the image lose weight:

    scores = (1 + α)·s(z) − α·s(z')                           (VCD, Leng et al. 2024, Eq. 3)
    scores[v] = −inf  where  s(z)[v] < log β + max_v' s(z)[v'] (adaptive plausibility, Eq. 4)

with ``s`` the identity (raw logits, VCD/ICD/VDD) or ``log_softmax`` (M3ID, PAI), as each
method's code does. The cut is on the expert's own scores, so a token the expert finds
implausible can never win through the contrast. Tokens are then chosen from ``scores`` — argmax, or
sampling after temperature, top-k and top-p — in greedy and sampled generation alike.

========================  ================================================================
method                    amateur and weights (the authors' code defaults)
========================  ================================================================
:func:`vcd`               the image with diffusion noise at step 500 of 1,000
                          (``distort:500``); α = 1, β = 0.1 (its POPE scripts)
:func:`icd`               the same image with a disturbance instruction before the question
                          (``instruct:<text>``); α = 1, β = 0.1
:func:`vdd`               no image (``blind``); α = 1, β = 0.1
:func:`m3id`              no image; log-probabilities; the weight grows with t:
                          ``l = l_c + ((1 − γ_t)/γ_t)·(l_c − l_u)``, γ_t = exp(−λt), λ = 0.02
:func:`pai`               no image; log-probabilities; ``γ·(l_c − l_u) + l_u``, γ = 1.1 (i.e.
                          α = γ − 1) plus the image-attention boost ``a + 0.2·|a|``
                          (:class:`~interventions.AttentionBoost`)
:func:`contrast`          any amateur (``blind``, ``no_audio``, ``null_audio:noise``, one
                          conflict source alone or removed ...); α = 0.5, β = 0.1: this
                          project's choice, the modality-conflict paper gives no setting
========================  ================================================================

Usage::

    from interventions.decoding import vcd, method
    interp.generate(vlm, samples, decoding=vcd())                       # greedy, contrasted
    interp.generate(vlm, samples, decoding=method("m3id"), do_sample=True, seed=1)

:func:`interp.generate` runs the expert rows and their amateur rows in one batch — one forward per
step inside one nnsight generate trace, each row with its own KV cache — and feeds the token chosen
for an expert row to its amateur rows too, from the first generated token on. Every edit composes
with it (it applies to the amateur rows as well: the model is edited, then decoded).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from jaxtyping import Float
from torch import Tensor

from interp.conditions import Condition
from interp.edits import Contrast, Intervention, digest
from interp.errors import ConditionError, DecodingError
from interp.generation import Decoding

from .attention import AttentionBoost

if TYPE_CHECKING:
    from interp.model import VLM

Space = Literal["logits", "logprobs"]
SPACES: tuple[str, ...] = ("logits", "logprobs")

# ICD's disturbance instruction (its paper's example of a "confused" role prompt).
DISTURBANCE = (
    "You are a confused objects detector to provide a fuzzy overview or impression of the image."
)


class ExponentialWeight:
    """M3ID's contrast weight at generated token t: ``(1 − γ_t)/γ_t = exp(λt) − 1`` with
    ``γ_t = exp(−λt)`` — small at the first tokens (0.02 at t = 1 with λ = 0.02), growing as the
    answer gets longer and drifts from the image."""

    def __init__(self, lam: float = 0.02) -> None:
        if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam >= 0):
            raise DecodingError(f"M3ID's lambda must be a finite number >= 0, got {lam!r}")
        self.lam = float(lam)

    def __call__(self, t: int) -> float:
        return math.expm1(self.lam * t)

    def fingerprint(self) -> dict[str, Any]:
        return {"type": "ExponentialWeight", "lam": self.lam}

    def __repr__(self) -> str:
        return f"ExponentialWeight(lam={self.lam})"


def _amateurs(amateur: Any) -> tuple[Condition, ...]:
    items = [amateur] if isinstance(amateur, (str, Condition)) else list(amateur or [])
    if not items:
        raise DecodingError("give an amateur condition, e.g. 'blind' or 'distort:500'")
    out = []
    for item in items:
        try:
            cond = Condition.parse(item)
        except ConditionError as err:
            raise DecodingError(f"bad amateur condition {item!r}: {err}") from err
        if cond.prefix == "removed":
            raise DecodingError("'no_prefix' is for scoring; an amateur is a generation input")
        out.append(cond)
    return tuple(out)


class ContrastiveDecoding(Decoding):
    """Contrast the expert's next-token scores with an amateur input's, with VCD's adaptive
    plausibility cut (see the module docstring for the formula).

    Args:
        amateur: the amateur condition (``"blind"``, ``"distort:500"``,
            ``"instruct:<text>"``, ``"null:black"`` ...), or several, whose scores are averaged
            (VDD averages a no-image and an unknown-image amateur).
        alpha: the contrast weight α ≥ 0 (0: the expert alone, with the cut).
        beta: the plausibility cut β in (0, 1]: tokens whose expert score is below
            ``log β + max`` are removed (β = 1 keeps only the expert's top token).
        schedule: optional ``t -> α_t`` (t = 1 for the first generated token) replacing ``alpha``
            at each step (M3ID's :class:`ExponentialWeight`).
        space: ``"logits"`` (raw logits, VCD) or ``"logprobs"`` (``log_softmax`` first, M3ID
            and PAI).
        edits: interventions the method needs besides the contrast (PAI's attention boost).
        name: the method's name in reprs and tables.

    Raises:
        DecodingError: α < 0, β outside (0, 1], an unknown space or a bad amateur.
    """

    def __init__(
        self,
        amateur: str | Condition | Sequence[str | Condition] = "blind",
        alpha: float = 1.0,
        beta: float = 0.1,
        schedule: Callable[[int], float] | None = None,
        *,
        space: Space = "logits",
        edits: Sequence[Intervention] = (),
        name: str = "contrast",
    ) -> None:
        if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha >= 0):
            raise DecodingError(f"alpha must be a finite number >= 0, got {alpha!r}")
        if not (isinstance(beta, (int, float)) and 0.0 < beta <= 1.0):
            raise DecodingError(f"beta must be in (0, 1], got {beta!r}")
        if space not in SPACES:
            raise DecodingError(f"unknown space {space!r}; use one of {SPACES}")
        if schedule is not None and not callable(schedule):
            raise DecodingError(f"schedule must be callable t -> alpha_t, got {schedule!r}")
        self.amateurs = _amateurs(amateur)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.schedule = schedule
        self.space = space
        self.edits = tuple(edits)
        self.name = name

    def check(self, vlm: VLM) -> None:
        """Before compute: every amateur degrades a modality the family takes (an amateur that
        drops audio on an image-only family would contrast the input with itself).

        Raises:
            DecodingError: names the family, the amateur and the modality.
        """
        for amateur in self.amateurs:
            edited = {
                "image": amateur.image.name != "full",
                "audio": amateur.audio is not None,
                "video": amateur.video is not None,
            }
            for kind, changed in edited.items():
                if changed and kind not in vlm.adapter.modalities:
                    raise DecodingError(
                        f"{vlm.adapter.name} takes {', '.join(vlm.adapter.modalities)} inputs, "
                        f"not {kind}: the amateur {str(amateur)!r} degrades the {kind}, which "
                        f"its inputs never carry; use an amateur that degrades "
                        f"{' or '.join(vlm.adapter.modalities)}"
                    )

    def weight(self, t: int) -> float:
        """α_t: the schedule's value at generated token t, else ``alpha``."""
        if self.schedule is None:
            return self.alpha
        value = float(self.schedule(t))
        if not (math.isfinite(value) and value >= 0):
            raise DecodingError(f"the schedule gave alpha_{t} = {value}; it must be finite, >= 0")
        return value

    def combine(
        self,
        expert: Float[Tensor, "batch vocab"],
        amateurs: Float[Tensor, "amateurs batch vocab"],
        t: int,
    ) -> Float[Tensor, "batch vocab"]:
        """``(1 + α_t)·s(z) − α_t·mean_k s(z'_k)``, −inf where ``s(z) < log β + max s(z)``."""
        if self.space == "logprobs":
            z, zp = expert.log_softmax(-1), amateurs.log_softmax(-1).mean(0)
        else:
            z, zp = expert, amateurs.mean(0)
        a = self.weight(t)
        scores = (1.0 + a) * z - a * zp
        cutoff = math.log(self.beta) + z.max(dim=-1, keepdim=True).values
        return scores.masked_fill(z < cutoff, float("-inf"))

    def lower(self, max_new_tokens: int) -> Contrast:
        """The same rule as plain data (see :meth:`interp.Decoding.lower`): α_t for t = 1 ..
        ``max_new_tokens`` computed here, so any schedule lowers."""
        weights = [self.weight(t) for t in range(1, max_new_tokens + 1)]
        return self.space == "logprobs", weights, math.log(self.beta)

    def fingerprint(self) -> dict[str, Any]:
        schedule = self.schedule
        if schedule is not None and not hasattr(schedule, "fingerprint"):
            schedule = f"{getattr(schedule, '__module__', '')}.{getattr(schedule, '__qualname__', repr(schedule))}"
        params = {k: v for k, v in vars(self).items() if k != "schedule"}
        return {
            "type": f"{type(self).__module__}.{type(self).__qualname__}",
            "params": digest(params),
            "schedule": digest(schedule),
        }

    def __repr__(self) -> str:
        amateur = ", ".join(repr(str(a)) for a in self.amateurs)
        weight = repr(self.schedule) if self.schedule is not None else f"alpha={self.alpha:g}"
        extra = f", edits={list(self.edits)!r}" if self.edits else ""
        return (
            f"{self.name}(amateur={amateur}, {weight}, beta={self.beta:g}, "
            f"space={self.space!r}{extra})"
        )


# -- the methods, with their authors' defaults ---------------------------------------------------


def vcd(noise_step: int = 500, alpha: float = 1.0, beta: float = 0.1) -> ContrastiveDecoding:
    """Visual Contrastive Decoding (Leng et al., CVPR 2024): the amateur is the image with forward
    diffusion noise at ``noise_step`` of 1,000 added to the normalised pixels
    (``x_t = sqrt(ᾱ_t)·x_0 + sqrt(1 − ᾱ_t)·ε``, see the ``distort`` condition); raw logits."""
    if not (isinstance(noise_step, int) and 0 <= noise_step < 1000):
        raise DecodingError(f"noise_step must be an integer in 0..999, got {noise_step!r}")
    return ContrastiveDecoding(f"distort:{noise_step}", alpha, beta, name="vcd")


def icd(
    instruction: str = DISTURBANCE, alpha: float = 1.0, beta: float = 0.1
) -> ContrastiveDecoding:
    """Instruction Contrastive Decoding (Wang et al., 2024): the amateur is the same image with a
    disturbance instruction placed before the question; raw logits."""
    if not isinstance(instruction, str) or not instruction.strip() or "+" in instruction:
        raise DecodingError(
            "the disturbance instruction must be non-empty text without '+' (build a Condition "
            "with Part('instruct', text) for any text)"
        )
    return ContrastiveDecoding(f"instruct:{instruction.strip()}", alpha, beta, name="icd")


def vdd(
    amateur: str | Sequence[str] = "blind", alpha: float = 1.0, beta: float = 0.1
) -> ContrastiveDecoding:
    """Visual debias decoding (VDD-None, Zhang et al., 2024): the amateur is the input without
    the image; several amateurs (e.g. ``("blind", "null:black")``) are averaged; raw logits."""
    return ContrastiveDecoding(amateur, alpha, beta, name="vdd")


def m3id(lam: float = 0.02, beta: float = 0.1, amateur: str = "blind") -> ContrastiveDecoding:
    """M3ID (Favero et al., CVPR 2024), as re-implemented by AvisC (no official code): on
    log-probabilities ``l_c`` (with the image) and ``l_u`` (without),
    ``l = l_c + ((1 − γ_t)/γ_t)·(l_c − l_u)``, γ_t = exp(−λt), t = 1 for the first generated
    token, with the same plausibility cut."""
    return ContrastiveDecoding(
        amateur, 0.0, beta, ExponentialWeight(lam), space="logprobs", name="m3id"
    )


def pai(
    alpha: float = 0.2,
    gamma: float = 1.1,
    beta: float = 0.1,
    layers: Sequence[int] | int | None = None,
) -> ContrastiveDecoding:
    """PAI ("Paying More Attention to Image", Liu et al., ECCV 2024): the image-attention boost
    ``a ← a + α·|a|`` on image columns of the generated token's attention row before the softmax
    (:class:`~interventions.AttentionBoost`, layers from the third on by default; eager or SDPA
    attention, here or on NDIF), plus guidance against the image-free input on log-probabilities,
    ``γ·(l_c − l_u) + l_u`` (= the contrast with α = γ − 1), cut at ``log β + max l_c``."""
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma >= 1):
        raise DecodingError(f"PAI's gamma must be a finite number >= 1, got {gamma!r}")
    boost = AttentionBoost(alpha, layers)
    return ContrastiveDecoding(
        "blind", gamma - 1.0, beta, space="logprobs", edits=(boost,), name="pai"
    )


def contrast(
    amateur: str | Condition | Sequence[str | Condition],
    alpha: float = 0.5,
    beta: float = 0.1,
) -> ContrastiveDecoding:
    """Contrastive decoding against any amateur, α = 0.5 and β = 0.1 by default (this project's
    choice for the modality-conflict diagnostic; that paper's text gives no setting)."""
    return ContrastiveDecoding(amateur, alpha, beta, name="contrast")


METHODS: dict[str, Callable[..., ContrastiveDecoding]] = {
    "vcd": vcd,
    "icd": icd,
    "vdd": vdd,
    "m3id": m3id,
    "pai": pai,
    "contrast": contrast,
}
PLAIN = ("greedy", "plain", "none")


def method(name: str, **params: Any) -> ContrastiveDecoding | None:
    """A decoding method by name with its defaults (``params`` override them); ``"greedy"`` (or
    ``"plain"``) gives None — plain decoding.

    Raises:
        DecodingError: an unknown name or a parameter the method does not take.
    """
    key = str(name).strip().lower()
    if key in PLAIN:
        if params:
            raise DecodingError(f"plain decoding takes no parameters, got {sorted(params)}")
        return None
    if key not in METHODS:
        known = ", ".join([*PLAIN[:1], *METHODS])
        raise DecodingError(f"unknown decoding method {name!r}; use one of {known}")
    try:
        return METHODS[key](**params)
    except TypeError as err:
        raise DecodingError(f"{key}: {err}") from err


__all__ = [
    "DISTURBANCE",
    "METHODS",
    "PLAIN",
    "SPACES",
    "ContrastiveDecoding",
    "ExponentialWeight",
    "contrast",
    "icd",
    "m3id",
    "method",
    "pai",
    "vcd",
    "vdd",
]
