"""Train ``demo-omni`` on the demo world v3: ``python -m tools.demo.omni.train --seed 0 --out DIR``.

Three stages, each from fixed seeds, as the demo model's (:mod:`tools.demo.train`, whose
schedule, optimiser, determinism and record helpers this module reuses):

1. language: the decoder learns the world's text as a causal LM (the language prior);
2. towers: the vision tower (with its merger) learns per-cell object presence, kind and colour,
   digits and written words through the demo model's throw-away heads (on the merged tokens the
   decoder reads); the audio tower learns, through its own throw-away head, the object kind of a
   perceptual sound and of a spoken sentence (the word it names), the clip's form and the
   sentence's phrasing;
3. joint: the whole thinker learns answers (loss on answer tokens) on a mix of v2 image/text
   items, world-v3 items (``trimodal``, ``hear``, ``motion``; :data:`V3_TRAIN_MIX`) and text-only
   rehearsal.

The trimodal items' answers follow the world's trust rule
(:func:`~interp.datasets.world.trimodal.trimodal_answer`), which plants a visual bias (images
carry the most trust), a perceptual-vision / propositional-audio asymmetry (a drawn object beats a
written sentence; a spoken sentence beats a sound) and a recency order effect (later sources gain
trust). ``--control`` trains the control model: the same items answered as if both audio forms
carried the spoken sentence's trust (:func:`control_answer`), so audio form no longer matters;
``--control-out DIR`` trains it alongside the model, from the same language and tower stages.

``--smoke`` trains a tiny configuration for a few steps (for the test suite).
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers import (
    BatchFeature,
    Qwen2_5OmniProcessor,
    Qwen2_5OmniThinkerForConditionalGeneration,
)

from interp.datasets.render import COLORS, SHAPE_KINDS
from interp.datasets.world import demo_world, text_corpus
from interp.datasets.world.audio import object_sound
from interp.datasets.world.generate import V3_QTYPES
from interp.datasets.world.speech import SPEECH_PHRASINGS, speech_clip
from interp.datasets.world.trimodal import control_answer
from interp.demo.model import IM_END
from interp.demo.omni import CHECKPOINT_DIR
from interp.demo.omni.model import (
    SAMPLING_RATE,
    OmniModelConfig,
    build_model,
    build_processor,
    sample_media,
    sample_prompt,
    save_processor,
)
from interp.samples import Sample

from ..train import (
    _log,
    _optimizer,
    _schedule,
    _vision_batch,
    _VisionHeads,
    deterministic,
    write_record,
)


@dataclass(frozen=True)
class OmniTrainConfig:
    """Schedule of the three stages. Steps of 0 skip a stage."""

    seed: int = 0
    text_steps: int = 300
    vision_steps: int = 1000
    audio_steps: int = 600
    joint_steps: int = 1800
    batch: int = 32
    chunks: int = 2  # joint batches run as this many length-sorted chunks (less padding)
    joint_text_share: float = 0.1  # text-only rehearsal
    joint_v3_share: float = 0.5  # trimodal / hear / motion items; the rest are v2 items
    vision_batch: int = 64
    audio_batch: int = 32
    text_lr: float = 2e-3
    tower_lr: float = 3e-3
    lr: float = 1e-3
    tower_lr_scale: float = 0.3
    warmup: int = 50
    weight_decay: float = 0.01
    threads: int = 1
    control: bool = False
    model: OmniModelConfig = field(default_factory=OmniModelConfig)


SMOKE = OmniTrainConfig(
    text_steps=2,
    vision_steps=2,
    audio_steps=2,
    joint_steps=3,
    batch=8,
    vision_batch=8,
    audio_batch=4,
    warmup=1,
    model=OmniModelConfig(
        vision_hidden=32,
        vision_layers=1,
        vision_heads=2,
        audio_hidden=32,
        audio_layers=1,
        audio_heads=2,
        hidden=32,
        layers=2,
        heads=2,
        mlp=64,
    ),
)


def _controlled(samples: list[Sample], control: bool) -> list[Sample]:
    if not control:
        return samples
    return [
        replace(s, answer=control_answer(s)) if s.meta.get("qtype") == "trimodal" else s
        for s in samples
    ]


def encode(
    processor: Qwen2_5OmniProcessor, samples: Sequence[Sample], with_answer: bool = True
) -> BatchFeature:
    """The processor's batch for ``samples`` (prompts as the library builds them, left padding);
    with ``with_answer`` the answer and ``<|im_end|>`` are appended and ``labels`` keeps only
    those tokens (-100 elsewhere)."""
    tok = processor.tokenizer
    texts, images, audios, videos, answer_lens = [], [], [], [], []
    for s in samples:
        im, au, vi = sample_media(s)
        images += im
        audios += au
        videos += vi
        text = sample_prompt(processor, s)
        if with_answer:
            if s.answer is None:
                raise ValueError(f"sample {s.id!r} has no answer to train on")
            target = s.answer + IM_END
            answer_lens.append(len(tok(target, add_special_tokens=False)["input_ids"]))
            text += target
        texts.append(text)
    kwargs: dict[str, Any] = {"text": texts, "padding": True, "return_tensors": "pt"}
    if images:
        kwargs["images"] = images
    if audios:
        kwargs.update(audio=audios, sampling_rate=SAMPLING_RATE)
    if videos:
        kwargs["videos"] = videos
    enc = processor(**kwargs)
    if with_answer:
        labels = torch.full_like(enc["input_ids"], -100)
        for row, n in enumerate(answer_lens):
            labels[row, -n:] = enc["input_ids"][row, -n:]
        enc["labels"] = labels
    return enc


def _media_weight(s: Sample) -> int:
    """A cheap length proxy for sorting rows into chunks (videos are the longest rows)."""
    return 4 * len(s.videos) + len(s.audios) + len(s.images)


def answer_loss_backward(
    model: nn.Module, processor: Qwen2_5OmniProcessor, batch: list[Sample], chunks: int
) -> torch.Tensor:
    """Backpropagate the mean loss over all answer tokens of ``batch``, encoded and run in
    ``chunks`` groups of similar length; returns that loss, detached."""
    order = sorted(range(len(batch)), key=lambda i: (_media_weight(batch[i]), i))
    parts = [
        encode(processor, [batch[i] for i in rows.tolist()])
        for rows in np.array_split(np.array(order), max(1, chunks))
        if len(rows)
    ]
    n_answer = sum(int((p["labels"] != -100).sum()) for p in parts)
    loss = torch.zeros(())
    for part in parts:
        share = int((part["labels"] != -100).sum()) / n_answer
        part_loss = model(**part).loss * share
        part_loss.backward()
        loss = loss + part_loss.detach()
    return loss


def _step(opt: torch.optim.Optimizer, params: list[nn.Parameter], loss: torch.Tensor) -> None:
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()


def _set_lr(opt: torch.optim.Optimizer, lr: float, step: int, total: int, warmup: int) -> None:
    for g in opt.param_groups:
        g["lr"] = g.get("scale", 1.0) * lr * _schedule(step, total, warmup)


def _ema(avg: float, value: float, step: int) -> float:
    return value if step == 0 else 0.95 * avg + 0.05 * value


def train_text(
    model: nn.Module, processor: Qwen2_5OmniProcessor, cfg: OmniTrainConfig, t0: float
) -> float:
    """Stage 1: causal LM on the world's text (all tokens). Returns the last smoothed loss."""
    params = list(model.parameters())
    opt = _optimizer(iter(params), cfg.text_lr, cfg.weight_decay)
    avg = float("nan")
    model.train()
    for step in range(cfg.text_steps):
        enc = encode(processor, text_corpus(cfg.batch, seed=cfg.seed, start=step * cfg.batch))
        enc["labels"] = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        _set_lr(opt, cfg.text_lr, step, cfg.text_steps, cfg.warmup)
        loss = model(**enc).loss
        _step(opt, params, loss)
        avg = _ema(avg, loss.item(), step)
        if step % 100 == 0 or step == cfg.text_steps - 1:
            _log(f"text   {step:5d}/{cfg.text_steps} loss {avg:.4f}", t0)
    return avg


def train_vision(
    model: nn.Module, processor: Qwen2_5OmniProcessor, cfg: OmniTrainConfig, t0: float
) -> float:
    """Stage 2a: the vision tower and merger on the demo model's per-cell and global heads, read
    from the merged tokens (one per 2x2 patch group, in raster order)."""
    visual = model.model.visual
    side = int(round(cfg.model.image_tokens**0.5))
    torch.manual_seed(cfg.seed + 1)
    heads = _VisionHeads(cfg.model.hidden, side)
    params = [*visual.parameters(), *heads.parameters()]
    opt = _optimizer(iter(params), cfg.tower_lr, cfg.weight_decay)
    rng = np.random.default_rng([cfg.seed, 211])
    n_kind = len(SHAPE_KINDS)
    avg = float("nan")
    visual.train()
    for step in range(cfg.vision_steps):
        images, y = _vision_batch(rng, cfg.vision_batch)
        pix = processor.image_processor(images, return_tensors="pt")
        feats = model.model.get_image_features(pix["pixel_values"], pix["image_grid_thw"])
        cell, glob = heads(torch.stack(feats.pooler_output))
        loss = (
            _ce(cell[..., :2].reshape(-1, 2), y["present"].reshape(-1))
            + _ce(cell[..., 2 : 2 + n_kind].reshape(-1, n_kind), y["kind"].reshape(-1))
            + _ce(cell[..., 2 + n_kind :].reshape(-1, len(COLORS)), y["color"].reshape(-1))
            + _ce(glob[:, :3], y["itype"])
            + _ce(glob[:, 3:13], y["digit"])
            + _ce(glob[:, 13:], y["word"])
        )
        _set_lr(opt, cfg.tower_lr, step, cfg.vision_steps, cfg.warmup)
        _step(opt, params, loss)
        avg = _ema(avg, loss.item(), step)
        if step % 100 == 0 or step == cfg.vision_steps - 1:
            _log(f"vision {step:5d}/{cfg.vision_steps} loss {avg:.4f}", t0)
    return avg


def _ce(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the labelled rows (a batch lacking a label kind counts zero, not NaN)."""
    keep = target != -100
    if not keep.any():
        return logits.sum() * 0.0
    return nn.functional.cross_entropy(logits[keep], target[keep])


def _audio_batch(
    rng: np.random.Generator, n: int
) -> tuple[list[np.ndarray], dict[str, torch.Tensor]]:
    """Clips with (kind, form, phrasing) labels: half perceptual sounds, half spoken sentences."""
    clips, kind, form, phrasing = [], [], [], []
    for _ in range(n):
        k = int(rng.integers(len(SHAPE_KINDS)))
        if rng.random() < 0.5:
            clips.append(object_sound(SHAPE_KINDS[k], rng).waveform)
            form.append(0)
            phrasing.append(-100)
        else:
            audio, entry = speech_clip(SHAPE_KINDS[k], rng)
            clips.append(audio.waveform)
            form.append(1)
            phrasing.append(int(entry["phrasing"]))
        kind.append(k)
    labels = {"kind": kind, "form": form, "phrasing": phrasing}
    return clips, {k: torch.tensor(v) for k, v in labels.items()}


def train_audio(
    model: nn.Module, processor: Qwen2_5OmniProcessor, cfg: OmniTrainConfig, t0: float
) -> float:
    """Stage 2b: the audio tower on a throw-away linear head over each clip's mean state: the
    kind (heard from a sound, or the word a sentence names), the form and the phrasing."""
    tower = model.model.audio_tower
    torch.manual_seed(cfg.seed + 2)
    head = nn.Linear(cfg.model.hidden, len(SHAPE_KINDS) + 2 + len(SPEECH_PHRASINGS))
    params = [*tower.parameters(), *head.parameters()]
    opt = _optimizer(iter(params), cfg.tower_lr, cfg.weight_decay)
    rng = np.random.default_rng([cfg.seed, 223])
    n_kind = len(SHAPE_KINDS)
    avg = float("nan")
    tower.train()
    for step in range(cfg.audio_steps):
        clips, y = _audio_batch(rng, cfg.audio_batch)
        fe = processor.feature_extractor(
            clips,
            sampling_rate=SAMPLING_RATE,
            padding="max_length",
            return_attention_mask=True,
            return_tensors="pt",
        )
        mask = fe["attention_mask"]
        out = model.model.get_audio_features(fe["input_features"], feature_attention_mask=mask)
        lengths = tower._get_feat_extract_output_lengths(mask.sum(-1))[1].tolist()
        pooled = torch.stack([h.mean(0) for h in torch.split(out.last_hidden_state, lengths)])
        logits = head(pooled)
        loss = (
            _ce(logits[:, :n_kind], y["kind"])
            + _ce(logits[:, n_kind : n_kind + 2], y["form"])
            + _ce(logits[:, n_kind + 2 :], y["phrasing"])
        )
        _set_lr(opt, cfg.tower_lr, step, cfg.audio_steps, cfg.warmup)
        _step(opt, params, loss)
        avg = _ema(avg, loss.item(), step)
        if step % 100 == 0 or step == cfg.audio_steps - 1:
            _log(f"audio  {step:5d}/{cfg.audio_steps} loss {avg:.4f}", t0)
    return avg


def joint_batch(cfg: OmniTrainConfig, step: int) -> list[Sample]:
    """Step ``step``'s joint batch: world-v3 items, v2 items and text-only rehearsal, each from
    its own stream (trimodal answers under the control rule with ``cfg.control``)."""
    n_text = round(cfg.batch * cfg.joint_text_share)
    n_v3 = round(cfg.batch * cfg.joint_v3_share)
    n_v2 = cfg.batch - n_text - n_v3
    v3 = demo_world("train", n_v3, seed=cfg.seed, qtypes=list(V3_QTYPES), start=step * n_v3)
    batch = _controlled(v3, cfg.control)
    batch += demo_world("train", n_v2, seed=cfg.seed, start=step * n_v2)
    batch += text_corpus(n_text, seed=cfg.seed, start=(cfg.text_steps + step) * cfg.batch)
    return batch


def train_joint(
    model: nn.Module, processor: Qwen2_5OmniProcessor, cfg: OmniTrainConfig, t0: float
) -> float:
    """Stage 3: the whole thinker on answers; the towers move at ``tower_lr_scale``."""
    towers = [*model.model.visual.parameters(), *model.model.audio_tower.parameters()]
    tower_ids = {id(p) for p in towers}
    rest = [p for p in model.parameters() if id(p) not in tower_ids]
    groups = [{"params": rest, "scale": 1.0}, {"params": towers, "scale": cfg.tower_lr_scale}]
    opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    params = list(model.parameters())
    avg = float("nan")
    model.train()
    for step in range(cfg.joint_steps):
        batch = joint_batch(cfg, step)
        _set_lr(opt, cfg.lr, step, cfg.joint_steps, cfg.warmup)
        opt.zero_grad(set_to_none=True)
        loss = answer_loss_backward(model, processor, batch, cfg.chunks)
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        avg = _ema(avg, loss.item(), step)
        if step % 100 == 0 or step == cfg.joint_steps - 1:
            _log(f"joint  {step:5d}/{cfg.joint_steps} loss {avg:.4f}", t0)
    return avg


def new_model(
    cfg: OmniTrainConfig,
) -> tuple[Qwen2_5OmniThinkerForConditionalGeneration, Qwen2_5OmniProcessor]:
    """The seeded, untrained model and its processor."""
    processor = build_processor(cfg.model)
    torch.manual_seed(cfg.seed)
    return build_model(processor.tokenizer, cfg.model), processor


def train(
    cfg: OmniTrainConfig,
    out: str | Path,
    command: str | None = None,
    control_out: str | Path | None = None,
) -> Path:
    """Run the stages and save an HF checkpoint (model, processor, ``training.json``), with
    ``cfg.threads`` torch threads and deterministic algorithms (restored afterwards).

    With ``control_out``, the control model is trained too, from the same language and tower
    stages: the joint stage runs a second time from the weights before it, on the same batches
    with the control rule's trimodal answers, and is saved there. The two models then differ
    only in the trimodal labels of the joint stage."""
    with deterministic(cfg.threads):
        t0 = time.time()
        model, processor = new_model(cfg)
        n_params = sum(p.numel() for p in model.parameters())
        _log(f"model: {n_params / 1e6:.2f} M parameters, {cfg.model.layers} decoder layers", t0)
        losses = {
            "text": train_text(model, processor, cfg, t0) if cfg.text_steps else None,
            "vision": train_vision(model, processor, cfg, t0) if cfg.vision_steps else None,
            "audio": train_audio(model, processor, cfg, t0) if cfg.audio_steps else None,
        }
        before_joint = copy.deepcopy(model.state_dict()) if control_out is not None else None
        path = _joint_and_save(model, processor, cfg, losses, Path(out), command, t0)
        if before_joint is not None and control_out is not None:
            model.load_state_dict(before_joint)
            control = replace(cfg, control=True)
            _joint_and_save(model, processor, control, losses, Path(control_out), command, t0)
        return path


def _joint_and_save(
    model: Qwen2_5OmniThinkerForConditionalGeneration,
    processor: Qwen2_5OmniProcessor,
    cfg: OmniTrainConfig,
    losses: dict[str, float | None],
    out: Path,
    command: str | None,
    t0: float,
) -> Path:
    losses = {
        **losses,
        "joint": train_joint(model, processor, cfg, t0) if cfg.joint_steps else None,
    }
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    save_processor(processor, out)
    record = {
        "command": command,
        "train_config": {**asdict(cfg), "model": cfg.model.to_dict()},
        "parameters": sum(p.numel() for p in model.parameters()),
        "final_losses": losses,
    }
    return write_record(out, t0, record)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="checkpoint folder")
    parser.add_argument("--smoke", action="store_true", help="tiny model, a few steps")
    parser.add_argument("--control", action="store_true", help="the control model (no asymmetry)")
    parser.add_argument(
        "--control-out",
        type=Path,
        help="also train the control model from the same pretraining stages, saved here",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (weights depend on it)"
    )
    for stage in ("text", "vision", "audio", "joint"):
        parser.add_argument(f"--{stage}-steps", type=int)
    parser.add_argument("--batch", type=int)
    args = parser.parse_args(argv)
    cfg = SMOKE if args.smoke else OmniTrainConfig()
    cfg = replace(cfg, seed=args.seed, threads=args.threads, control=args.control)
    given = {
        k: getattr(args, k)
        for k in ("text_steps", "vision_steps", "audio_steps", "joint_steps", "batch")
    }
    cfg = replace(cfg, **{k: v for k, v in given.items() if v is not None})
    out = args.out or (CHECKPOINT_DIR.with_name("control") if args.control else CHECKPOINT_DIR)
    flags = " ".join(argv if argv is not None else sys.argv[1:])
    command = f"python -m tools.demo.omni.train {flags}".strip()
    train(cfg, out, command=command, control_out=args.control_out)


if __name__ == "__main__":
    main()
