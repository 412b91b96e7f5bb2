"""``interp doctor``: check a checkpoint before a long job on it.

Loads the model (lazily where asked), renders one templated prompt per condition and shows it with
the question, answer, image, audio and video spans marked, counts each modality's tokens, checks that the named
positions decode to their text, that residual reads equal a plain Hugging Face forward and that
results do not depend on the batch, names the attention implementation, dtype and device map, and
estimates the memory a batch needs. Every check ends as one line: ``ok`` or ``problem`` with the
fix. A problem makes the command exit with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from PIL import Image

from .cli import ADAPTER_HELP, MODEL_HELP, REMOTE_HELP, use_adapter
from .conditions import Condition
from .encoding import Encoding, append_targets, encode, question_mask, target_ids
from .encoding.locate import comparable
from .encoding.select import slot_mask
from .errors import InterpError
from .media import Audio, audio_rate
from .reprs import Summary
from .samples import Sample

if TYPE_CHECKING:
    from .model import VLM

CONDITIONS = ("full", "blind", "null:black", "no_question")
MEDIA = ("image", "audio", "video")


@dataclass
class Check:
    """One check's outcome: ``status`` is ``"ok"``, ``"note"`` (worth knowing, not wrong) or
    ``"problem"`` (with ``fix``)."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        fix = f" — fix: {self.fix}" if self.fix else ""
        return f"{self.status:<8} {self.name}: {self.detail}{fix}"


@dataclass(repr=False)
class DoctorReport(Summary):
    """What :func:`doctor` found: facts about the model, each condition's marked prompt, and the
    checks."""

    facts: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    def _repr_head(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checks": len(self.checks),
            "problems": sum(c.status == "problem" for c in self.checks),
        }

    @property
    def ok(self) -> bool:
        return all(c.status != "problem" for c in self.checks)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([vars(c) for c in self.checks])

    def render(self) -> str:
        lines = ["model"]
        lines += [f"  {k:<22} {v}" for k, v in self.facts.items()]
        for cond, prompt in self.prompts.items():
            lines += ["", f"prompt under {cond!r}", *("  " + p for p in prompt.splitlines())]
        lines += ["", "checks", *("  " + c.line() for c in self.checks)]
        return "\n".join(lines)


def default_image(size: int = 336) -> Image.Image:
    """A reproducible test picture (a colour gradient with a square), used without ``--image``."""
    y, x = np.mgrid[0:size, 0:size]
    pixels = np.stack([x * 255 // size, y * 255 // size, np.full_like(x, 96)], -1).astype(np.uint8)
    pixels[size // 3 : 2 * size // 3, size // 3 : 2 * size // 3] = (230, 40, 40)
    return Image.fromarray(pixels, "RGB")


def default_sample(vlm: VLM, question: str = "What is in the image?") -> Sample:
    """The test picture, plus, for a family that takes them, one second of a 440 Hz tone (at the
    processor's audio rate) and a 4-frame video of the picture sliding sideways."""
    image = default_image()
    extra: dict[str, Any] = {}
    if "audio" in vlm.adapter.modalities:
        rate = audio_rate(vlm.processor) or 16000
        t = np.arange(rate, dtype=np.float32) / rate
        extra["audio"] = Audio(0.5 * np.sin(2 * np.pi * 440.0 * t).astype(np.float32), rate)
    if "video" in vlm.adapter.modalities:
        frame = np.asarray(image.resize((64, 64)))
        extra["video"] = np.stack([np.roll(frame, 8 * k, axis=1) for k in range(4)])
    if "image" not in vlm.adapter.modalities:
        return Sample(question=question, id="doctor", **extra)
    return Sample(image=image, question=question, id="doctor", **extra)


def marked_prompt(vlm: VLM, enc: Encoding, row: int, answer_mask: torch.Tensor | None) -> str:
    """The row's prompt as the model reads it, with ``⟦question … ⟧``, ``⟦answer … ⟧`` and one
    ``⟦image k: n tokens⟧`` per image (``⟦audio k: …⟧``, ``⟦video k: …⟧`` per audio input and
    video; padding dropped)."""
    n = enc.input_ids.shape[1]
    roles: list[str] = ["text"] * n
    attended = enc.attention_mask[row].bool().tolist()
    for kind in MEDIA:
        slot = 0
        while True:
            mask = slot_mask(enc, kind, slot)[row]
            if not bool(mask.any()):
                break
            for i in mask.nonzero().flatten().tolist():
                roles[i] = f"{kind} {slot + 1}"
            slot += 1
        for i in enc.mask(kind)[row].nonzero().flatten().tolist():
            if roles[i] == "text":
                roles[i] = kind
    try:
        for i in question_mask(enc)[row].nonzero().flatten().tolist():
            roles[i] = "question"
    except InterpError:
        pass
    if answer_mask is not None:
        for i in answer_mask[row].nonzero().flatten().tolist():
            roles[i] = "answer"
    pieces = _token_texts(vlm, enc, row)
    out: list[str] = []
    i = 0
    while i < n:
        j = i
        while j < n and roles[j] == roles[i] and attended[j] == attended[i]:
            j += 1
        if attended[i]:
            text = "".join(pieces[i:j])
            role = roles[i]
            if role.split()[0] in MEDIA:
                out.append(f"⟦{role}: {j - i} tokens⟧")
            elif role in ("question", "answer"):
                out.append(f"⟦{role} {text}⟧")
            else:
                out.append(text)
        i = j
    return "".join(out)


def _token_texts(vlm: VLM, enc: Encoding, row: int) -> list[str]:
    """Each token's text as it stands in the text the tokenizer read (spaces the tokenizer folded
    into a token included), from the character offsets; decoded where a token has none (BOS,
    appended answer tokens)."""
    ids = enc.input_ids[row].tolist()
    text = enc.texts[row] if row < len(enc.texts) else None
    if text is None or enc.offsets is None:
        return [vlm.tokenizer.decode([t], skip_special_tokens=False) for t in ids]
    out, cursor = [], 0
    run: list[int] = []  # consecutive tokens without offsets, decoded together
    for t, (a, b) in zip(ids, enc.offsets[row].tolist()):
        if b > a and b <= len(text):
            out.append(text[min(cursor, a) : b] if cursor <= a else text[a:b])
            cursor = max(cursor, b)
            run = []
        else:
            # a token's text is what it adds to the run's decoding: a tokenizer that marks word
            # starts (SentencePiece "▁", byte-level "Ġ") drops the space when a token is decoded
            # alone ("a", "red" -> "ared")
            before = vlm.tokenizer.decode(run, skip_special_tokens=False) if run else ""
            run.append(t)
            after = vlm.tokenizer.decode(run, skip_special_tokens=False)
            out.append(after[len(before) :] if after.startswith(before) else after)
    return out


def _position_checks(
    vlm: VLM, sample: Sample, answer: str, report: DoctorReport, conditions: Sequence[str]
) -> int:
    """Add the image-token and position checks and each condition's marked prompt; return the
    prompt length under ``full`` (0 when ``full`` is not among ``conditions``)."""
    problems: list[str] = []
    counts: dict[str, int] = {}
    media: dict[str, dict[str, int]] = {"audio": {}, "video": {}}
    carried = {"audio": sample.has_audio, "video": sample.has_video}
    full_length = 0
    tok = vlm.tokenizer
    for cond in conditions:
        condition = Condition.parse(cond)
        if condition.kind == "blind" and not vlm.adapter.mixed_batches and not sample.has_image:
            continue
        enc = encode(vlm, [sample], condition)
        target = target_ids(vlm, [answer])
        extended, _, valid = append_targets(vlm, enc, target)
        answer_mask = torch.zeros_like(extended.image_mask)
        answer_mask[0, -len(target[0]) :] = valid[0, : len(target[0])]
        report.prompts[cond] = marked_prompt(vlm, extended, 0, answer_mask)
        counts[cond] = int(enc.image_mask[0].sum())
        for kind, found in media.items():
            if carried[kind]:
                found[cond] = int(enc.mask(kind)[0].sum())
                keeps = condition.uses_audio if kind == "audio" else condition.uses_video
                if keeps != bool(found[cond]):
                    problems.append(f"{cond}: {found[cond]} {kind} tokens")
        if cond == "full":
            full_length = int(enc.input_ids.shape[1])
        try:
            found = vlm.tokenizer.decode(enc.input_ids[0][question_mask(enc)[0]].tolist())
            if comparable(tok, found) != comparable(tok, _unslotted(enc.questions[0])):
                problems.append(f"{cond}: question positions read {found!r}")
        except InterpError as err:
            problems.append(f"{cond}: {err}")
        got = vlm.tokenizer.decode(extended.input_ids[0][answer_mask[0]].tolist())
        if comparable(tok, got) != comparable(tok, answer):
            problems.append(f"{cond}: answer positions read {got!r}, not {answer!r}")
        if (condition.uses_image and sample.has_image) != bool(counts[cond]):
            problems.append(f"{cond}: {counts[cond]} image tokens")
    shown = ", ".join(f"{c} {k}" for c, k in counts.items())
    if sample.has_image or not counts:  # an audio-language model's sample carries no image
        report.checks.append(
            Check("image tokens", "ok" if counts else "problem", f"per condition: {shown}")
        )
    for kind, found in media.items():
        if found:
            shown = ", ".join(f"{c} {k}" for c, k in found.items())
            report.checks.append(Check(f"{kind} tokens", "ok", f"per condition: {shown}"))
    if problems:
        report.checks.append(
            Check(
                "positions",
                "problem",
                "; ".join(problems),
                "report the prompt above as a bug; meanwhile pass explicit positions (bool masks)",
            )
        )
    else:
        report.checks.append(
            Check(
                "positions",
                "ok",
                "question, answer and "
                f"{'/'.join(k for k in MEDIA if (k == 'image' and sample.has_image) or media.get(k))} "
                f"positions decode to their text under "
                f"{len(counts)} conditions",
            )
        )
    return full_length


def _unslotted(question: str) -> str:
    for slot in ("{image}", "{audio}", "{video}"):
        question = question.replace(slot, " ")
    return question


def _tolerance(vlm: VLM) -> float:
    """Largest accepted difference relative to the states' magnitude: fp32 kernels that sum in
    another order (another batch, another padding) differ by a few units of 1e-7 per op, which
    deep models accumulate to ~1e-6 relative; half precision rounds every op to ~4e-3."""
    return 1e-5 if vlm.dtype == torch.float32 else 5e-2


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a − b| over max(|b|, 1), per layer, worst layer (``[..., layer, d]``)."""
    a, b = a.float().flatten(0, -3), b.float().flatten(0, -3)
    diff = (a - b).abs().amax(dim=(0, 2))
    scale = b.abs().amax(dim=(0, 2)).clamp(min=1.0)
    return float((diff / scale).max())


def _within(
    report: DoctorReport, name: str, worst: float, tol: float, detail: str, fix: str
) -> None:
    """Add the check ``name``: ok where ``worst`` is within ``tol``, else a problem with ``fix``
    (the one verdict of every numerical comparison here)."""
    ok = worst <= tol
    report.checks.append(Check(name, "ok" if ok else "problem", detail, "" if ok else fix))


def _parity_check(vlm: VLM, sample: Sample, report: DoctorReport) -> None:
    from .residual import residual_stream

    got = residual_stream(vlm, [sample], progress_bar=False)
    enc = encode(vlm, [sample], "full")
    with torch.no_grad():
        out = vlm.hf(**enc.inputs, output_hidden_states=True)
    # Q-Former families return the language model's outputs inside theirs
    hidden = getattr(out, "hidden_states", None) or out.language_model_outputs.hidden_states
    last = int(enc.last_index[0])
    # hidden_states[L] is after the final norm; the library's index L is before it
    reference = torch.stack([hidden[layer][0, last].cpu() for layer in range(vlm.n_layers)])
    worst = _relative(got[:, : vlm.n_layers], reference[None])
    tol = _tolerance(vlm)
    _within(
        report,
        "residual reads",
        worst,
        tol,
        f"library vs HF output_hidden_states, layers 0..{vlm.n_layers - 1}: max difference "
        f"{worst:.1e} of the states' scale (tolerance {tol:g} for "
        f"{str(vlm.dtype).replace('torch.', '')})",
        "report this model: an adapter's module path may be wrong",
    )
    # the logit lens of the last state (final norm, head, the forward's own transform of the
    # head's output) against the forward's logits: a transform the library misses shows here
    lens = vlm.unembed(got[0, vlm.n_layers]).float().cpu()
    worst = _relative(lens[None, None], out.logits[0, last].float().cpu()[None, None])
    _within(
        report,
        "logits",
        worst,
        tol,
        f"library (final norm, head, {vlm.head_transform or 'no transform'}) vs HF logits at "
        f"the last token: max difference {worst:.1e} of their scale (tolerance {tol:g})",
        "the forward transforms its head's output in a way the library does not apply "
        "(interp/adapters/logits.py); report this model",
    )


def _batch_check(vlm: VLM, sample: Sample, report: DoctorReport) -> None:
    from .residual import residual_stream

    other = Sample(
        image=sample.image,
        question=f"{sample.question} {sample.question}",  # longer: the short row gets padding
        id=f"{sample.id}-long",
    )
    alone = torch.cat(
        [residual_stream(vlm, [s], batch_size=1, progress_bar=False) for s in (sample, other)]
    )
    together = residual_stream(vlm, [sample, other], batch_size=2, progress_bar=False)
    worst = _relative(together, alone)
    tol = _tolerance(vlm)
    _within(
        report,
        "batch invariance",
        worst,
        tol,
        f"batch of 1 vs 2 (left padding): max difference {worst:.1e} of the states' scale "
        f"(tolerance {tol:g})",
        "run with --batch-size 1 and report this model",
    )


def _memory(vlm: VLM, seq: int, batch_size: int, new_tokens: int) -> str:
    config = vlm.hf.config.get_text_config()
    bytes_per = torch.finfo(vlm.dtype).bits // 8
    params = sum(p.numel() for p in vlm.hf.parameters()) * bytes_per
    heads = getattr(config, "num_attention_heads", 1)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or vlm.d_model // heads
    kv = 2 * vlm.n_layers * kv_heads * head_dim * (seq + new_tokens) * batch_size * bytes_per
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    logits = batch_size * seq * vocab * 4
    gib = 1024**3
    return (
        f"weights {params / gib:.2f} GiB; a batch of {batch_size} × {seq} tokens: KV cache "
        f"{kv / gib:.2f} GiB (+{new_tokens} generated), full-sequence logits {logits / gib:.2f} GiB"
    )


def _adapter_checks(vlm: VLM, report: DoctorReport) -> None:
    """The adapter's load-time invariants (:func:`interp.adapters.infer.invariants`)."""
    from .adapters.infer import invariants

    for c in invariants(vlm.adapter, vlm.hf):
        fix = "" if c.ok else f"set {c.field} (interp.load(..., adapter=...) or --adapter)"
        report.checks.append(
            Check(f"adapter: {c.name}", "ok" if c.ok else "problem", c.detail, fix)
        )
    if not vlm.adapter.layout_verified and "image" in vlm.adapter.modalities:
        report.checks.append(
            Check(
                "adapter: layout",
                "note",
                "the pixel/token layout is not verified for this type: distort and other "
                "pixel-space conditions, token regions, attribution maps and region edits raise "
                "LayoutNotMappedError"
                + (f" ({vlm.adapter.layout_refusal})" if vlm.adapter.layout_refusal else ""),
            )
        )
    elif vlm.adapter.layout_checked:
        report.checks.append(Check("adapter: layout", "ok", vlm.adapter.layout_checked, ""))


def _vectors(output: Any, d: int) -> int | None:
    """How many d-wide vectors a feature module returned (a tensor, or an output object's
    ``pooler_output`` / ``last_hidden_state``; a tuple of per-image tensors is summed)."""
    for value in (
        getattr(output, "pooler_output", None),
        output,
        getattr(output, "last_hidden_state", None),
    ):
        parts = value if isinstance(value, (tuple, list)) else (value,)
        if parts and all(isinstance(p, torch.Tensor) and p.shape[-1] == d for p in parts):
            return int(sum(p.numel() for p in parts) // d)
    return None


def _feature_count_check(vlm: VLM, sample: Sample, report: DoctorReport) -> None:
    """The image-feature site returns as many vectors as the prompt has image placeholders."""
    if "image" not in vlm.adapter.modalities or vlm.adapter.fusion != "tokens":
        return
    image_only = dataclasses.replace(sample, audio=None, video=None)
    enc = encode(vlm, [image_only], "full")
    seen: list[Any] = []
    module = vlm.adapter.image_features_module(vlm.hf)
    hook = module.register_forward_hook(lambda _m, _a, out: seen.append(out))
    try:
        with torch.no_grad():
            vlm.hf(**enc.inputs)
    finally:
        hook.remove()
    count = _vectors(seen[0], vlm.d_model) if seen else None
    placeholders = int(enc.image_mask.sum())
    ok = count == placeholders
    status = "ok" if ok else ("problem" if vlm.adapter.inferred else "note")
    report.checks.append(
        Check(
            "adapter: image features",
            status,
            f"{vlm.adapter.image_features} gives {count} vectors for {placeholders} image "
            "placeholders" + ("" if ok or vlm.adapter.inferred else " (see the adapter notes)"),
            "" if ok or not vlm.adapter.inferred else "set image_features",
        )
    )


def _skipped_parts(vlm: VLM) -> str:
    """For a full omni checkpoint: which parts :func:`interp.load` left unbuilt, and their size
    counted on the meta device; "" otherwise."""
    from .model import model_config
    from .thinker import skipped_parameters, wrapper_of

    if vlm.source is None:
        return ""
    try:
        whole = model_config(vlm.source, whole=True)
    except InterpError:
        return ""
    if wrapper_of(whole) is None:
        return ""
    bytes_per = torch.finfo(vlm.dtype).bits // 8
    parts = [
        f"{name} ({'unknown size' if n is None else f'{n / 1e6:.1f} M params, {n * bytes_per / 1024**3:.2f} GiB'})"
        for name, n in skipped_parameters(whole).items()
    ]
    return f"{whole.model_type}: its thinker is loaded; not built: {', '.join(parts)}"


def doctor(
    vlm: VLM,
    sample: Sample | None = None,
    *,
    answer: str = "A red square.",
    conditions: Sequence[str] = CONDITIONS,
    forward_checks: bool = True,
    batch_size: int = 16,
) -> DoctorReport:
    """Check ``vlm`` on one sample (default: :func:`default_sample` — a generated picture and a
    plain question, with a tone and a short video for families that take audio and video).

    ``forward_checks=False`` (a lazily loaded model) skips the checks that run the model, so no
    weight is read. A sample with audio (video) adds ``no_audio`` (``no_video``) to the default
    conditions.
    """
    sample = sample or default_sample(vlm)
    if conditions is CONDITIONS:
        if "image" not in vlm.adapter.modalities:  # no image to replace by a black one
            conditions = tuple(c for c in CONDITIONS if not c.startswith("null:"))
        conditions = tuple(conditions) + tuple(
            f"no_{kind}"
            for kind, has in (("audio", sample.has_audio), ("video", sample.has_video))
            if has
        )
    report = DoctorReport()
    hf = vlm.hf
    tok = vlm.tokenizer
    report.facts = {
        "class": type(hf).__name__,
        "adapter": vlm.adapter.name,
        "decoder layers": str(vlm.n_layers),
        "width (d_model)": str(vlm.d_model),
        # an audio-language model has no image token
        **(
            {
                "image token": f"{tok.convert_ids_to_tokens(vlm.image_token_id)!r} = {vlm.image_token_id}"
            }
            if "image" in vlm.adapter.modalities
            else {}
        ),
        "modalities": ", ".join(vlm.adapter.modalities),
        "tokenizer": f"{type(tok).__name__} ({len(tok)} tokens, fast={tok.is_fast})",
        "dtype": str(vlm.dtype).replace("torch.", ""),
        "device map": str(getattr(hf, "hf_device_map", None) or vlm.device),
        "attention": str(getattr(hf.config, "_attn_implementation", None) or "default"),
        "logits": f"{vlm.head_transform} of the head's output z (as the forward returns them)"
        if vlm.head_transform is not None
        else "the head's output",
    }
    for kind in ("audio", "video"):
        if kind in vlm.adapter.modalities:
            token = vlm.adapter.token_id(hf, kind)  # type: ignore[arg-type]
            report.facts[f"{kind} token"] = f"{tok.convert_ids_to_tokens(token)!r} = {token}"
    if vlm.adapter.notes:
        report.facts["adapter notes"] = vlm.adapter.notes
    skipped = _skipped_parts(vlm)
    if skipped:
        report.facts["checkpoint"] = skipped
    _adapter_checks(vlm, report)
    full_length = _position_checks(vlm, sample, answer, report, conditions)
    attention = report.facts["attention"]
    report.checks.append(
        Check(
            "attention",
            "ok" if attention in ("eager", "sdpa") else "note",
            f"{attention}: "
            + (
                "attention knockout, PAI and attention maps can run"
                if attention == "eager"
                else "attention knockout, PAI and attention maps can run (eager attention's "
                "weights recomputed from the attention call's inputs)"
                if attention == "sdpa"
                else "attention knockout, PAI and attention maps need "
                "attn_implementation='sdpa' or 'eager'"
            ),
        )
    )
    if not tok.is_fast:
        report.checks.append(
            Check(
                "tokenizer",
                "problem",
                "a slow tokenizer gives no character offsets, so named positions cannot be found",
                "load the processor with use_fast=True",
            )
        )
    if forward_checks:
        _feature_count_check(vlm, sample, report)
        _parity_check(vlm, sample, report)
        _batch_check(vlm, sample, report)
        seq = full_length or int(encode(vlm, [sample], "full").input_ids.shape[1])
        report.checks.append(Check("memory", "note", _memory(vlm, seq, batch_size, 32)))
    else:
        report.checks.append(
            Check("forward checks", "note", "skipped (lazy load: no weight was read)")
        )
    return report


# -- command ---------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add ``interp doctor``."""
    parser = subparsers.add_parser(
        "doctor",
        help="check a checkpoint before a long job: prompts, positions, parity, memory",
        description="Load a model, show its templated prompt per condition with the question, "
        "answer and image spans marked, and check positions, residual-read parity, batch "
        "invariance and memory. Exits 2 when a check finds a problem.",
    )
    parser.add_argument("--model", required=True, help=MODEL_HELP)
    parser.add_argument("--adapter", default=None, help=ADAPTER_HELP)
    parser.add_argument("--image", default=None, help="an image file (default: a test picture)")
    parser.add_argument("--question", default="What is in the image?")
    parser.add_argument("--answer", default="A red square.", help="a teacher-forced answer")
    parser.add_argument(
        "--lazy", action="store_true", help="load on the meta device; skip the forward checks"
    )
    parser.add_argument(
        "--remote",
        action="store_true",
        help=f"{REMOTE_HELP}: no weights are read, so the forward checks are skipped",
    )
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--batch-size", type=int, default=16, help="for the memory estimate")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    from .model import load

    adapter = use_adapter(args.adapter)
    image: Any = None
    if args.image is not None:
        sample = Sample(image=args.image, question=args.question, id="doctor")
        sample.load_images()  # a missing or unreadable file is reported before loading
        image = sample.image
    lazy = args.lazy or args.remote  # a remote model has no weights here
    remote = {"remote": True} if args.remote else {}
    vlm = load(
        args.model, dtype=getattr(torch, args.dtype), dispatch=not lazy, adapter=adapter, **remote
    )
    sample = default_sample(vlm, args.question)
    if image is not None:
        sample = dataclasses.replace(sample, image=image)
    report = doctor(
        vlm,
        sample,
        answer=args.answer,
        forward_checks=not lazy,
        batch_size=args.batch_size,
    )
    print(report.render())
    if not report.ok:
        print("error: doctor found a problem (see the checks above)", file=sys.stderr)
        return 2
    return 0


__all__ = ["Check", "DoctorReport", "default_image", "default_sample", "doctor", "marked_prompt"]
