"""Train the demo VLM on the demo world: ``python -m tools.demo.train --seed 0 --out DIR``.

Three stages, each from fixed seeds, so one seed and thread count give the same weights:

1. language: the decoder (embeddings, layers, head) learns the world's text as a causal LM, which
   plants the language prior ("what color is the banana ?" -> yellow);
2. vision: the SigLIP tower learns per-cell object presence, kind and colour (colours uniform, so
   the tower itself carries no prior), digits and written words, through throw-away linear heads;
3. joint: the whole Llava learns image-question-answer items of the training split (loss on the
   answer tokens only), where prior-bearing objects have their canonical colour 95% of the time,
   with a tenth of each batch rehearsing the text-only corpus.

``--smoke`` trains a tiny configuration for a few steps (for the test suite).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import nn
from transformers import LlavaForConditionalGeneration, LlavaProcessor

from interp.datasets.render import (
    CELLS,
    COLORS,
    SHAPE_KINDS,
    SceneObject,
    render_digit,
    render_scene,
    render_word,
)
from interp.datasets.world import demo_world, text_corpus
from interp.demo import CHECKPOINT_DIR
from interp.demo.model import (
    IM_END,
    IMAGE,
    DemoModelConfig,
    build_model,
    build_processor,
    image_token_count,
    pixel_values,
    sample_images,
    sample_prompt,
)
from interp.samples import Sample


@dataclass(frozen=True)
class TrainConfig:
    """Schedule of the three stages. Steps of 0 skip a stage."""

    seed: int = 0
    text_steps: int = 400
    vision_steps: int = 2000
    joint_steps: int = 2300
    batch: int = 48
    chunks: int = 2  # joint-stage batches run as this many length-sorted chunks (less padding)
    # Share of each joint-stage batch taken from the text-only corpus (as visual instruction
    # tuning mixes in text-only data), which keeps the language prior and blind answers alive.
    joint_text_share: float = 0.1
    vision_batch: int = 96
    text_lr: float = 2e-3
    vision_lr: float = 3e-3
    lr: float = 1e-3
    tower_lr_scale: float = 0.3  # the pretrained tower moves slower in the joint stage
    # The decoder's lower layers keep (most of) their language pretraining in the joint stage, as a
    # pretrained LLM's early layers barely move in visual instruction tuning: learning-rate scale
    # of decoder layers 0..lower_layers-1 (0 = frozen), and whether the token embeddings are frozen.
    lower_layers: int = 6
    lower_lr_scale: float = 0.0
    freeze_embeddings: bool = False
    warmup: int = 100
    weight_decay: float = 0.01
    threads: int = 1
    model: DemoModelConfig = field(default_factory=DemoModelConfig)


# Vision pretraining skips near-invisible objects: they only add label noise to the probes.
VISION_OPACITY_FLOOR = 0.1

SMOKE = TrainConfig(
    text_steps=4,
    vision_steps=4,
    joint_steps=6,
    batch=8,
    vision_batch=8,
    warmup=2,
    lower_layers=1,
    model=DemoModelConfig(
        vision_hidden=32, vision_layers=1, vision_mlp=64, hidden=32, layers=2, mlp=64
    ),
)


def encode(
    processor: LlavaProcessor,
    samples: Sequence[Sample],
    with_answer: bool,
    with_image: bool = True,
    image_tokens: int | None = None,
) -> dict[str, torch.Tensor]:
    """Tokenise a batch as the processor would (left padding), plus ``labels`` for answers.

    Each image placeholder is expanded to ``image_tokens`` copies (a sample may hold several
    images; pixels form one flat list in prompt order) and pixels are normalised by
    :func:`pixel_values`; the tests check equality with ``processor(...)``. With ``with_answer``
    the answer and ``<|im_end|>`` are appended and ``labels`` keeps only those tokens (-100 else).
    """
    tok = processor.tokenizer
    n_img = image_tokens if image_tokens is not None else image_token_count(processor)
    texts: list[str] = []
    images: list[Image.Image] = []
    answer_lens: list[int] = []
    for s in samples:
        use_image = with_image and s.image is not None
        text = sample_prompt(processor, s, use_image).replace(IMAGE, IMAGE * n_img)
        if use_image:
            images.extend(sample_images(s))
        if with_answer:
            if s.answer is None:
                raise ValueError(f"sample {s.id!r} has no answer to train on")
            target = s.answer + IM_END
            answer_lens.append(len(tok(target, add_special_tokens=False)["input_ids"]))
            text += target
        texts.append(text)
    enc = tok(texts, padding=True, return_tensors="pt", add_special_tokens=False)
    out: dict[str, torch.Tensor] = {
        "input_ids": enc["input_ids"],
        "attention_mask": enc["attention_mask"],
    }
    if images:
        out["pixel_values"] = pixel_values(images)
    if with_answer:
        labels = torch.full_like(enc["input_ids"], -100)
        width = labels.shape[1]
        for i, k in enumerate(answer_lens):  # left padding: the answer ends every row
            labels[i, width - k :] = enc["input_ids"][i, width - k :]
        out["labels"] = labels
    return out


def length_chunks(
    enc: dict[str, torch.Tensor], chunks: int, image_token_id: int, image_tokens: int
) -> list[dict[str, torch.Tensor]]:
    """Split a left-padded batch into ``chunks`` row groups of similar length, padding trimmed.

    Rows are sorted by length (stable) and cut into near-equal groups; each group keeps its rows in
    batch order and only the columns of its longest row; ``pixel_values`` follow their rows
    (``image_tokens`` positions of ``image_token_id`` per image). A forward over the groups costs
    the sum of their padded sizes instead of ``rows x longest``; each row's tokens and mask are
    unchanged.
    """
    if chunks <= 1:
        return [enc]
    lengths = enc["attention_mask"].sum(dim=1)
    n_images = (enc["input_ids"] == image_token_id).sum(dim=1) // image_tokens
    first_image = torch.cumsum(n_images, 0) - n_images
    out = []
    for rows in torch.tensor_split(torch.argsort(lengths, stable=True), chunks):
        if len(rows) == 0:
            continue
        rows = torch.sort(rows).values
        width = int(lengths[rows].max())
        part = {k: v[rows, -width:] for k, v in enc.items() if k != "pixel_values"}
        images = [int(first_image[r]) + j for r in rows for j in range(int(n_images[r]))]
        if images:
            part["pixel_values"] = enc["pixel_values"][images]
        out.append(part)
    return out


def _lm_labels(enc: dict[str, torch.Tensor]) -> torch.Tensor:
    return enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)


def _schedule(step: int, total: int, warmup: int) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < warmup:
        return (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * t))


def _optimizer(params: Iterator[nn.Parameter], lr: float, wd: float) -> torch.optim.AdamW:
    return torch.optim.AdamW(list(params), lr=lr, weight_decay=wd, betas=(0.9, 0.98))


class _VisionHeads(nn.Module):
    """Throw-away probes on the tower's last hidden states (the features Llava projects)."""

    def __init__(self, d: int, side: int) -> None:
        super().__init__()
        self.side = side  # patches per image side; each grid cell is a (side/2)^2 block
        self.cell = nn.Linear(d, 2 + len(SHAPE_KINDS) + len(COLORS))
        self.glob = nn.Linear(d, 3 + 10 + len(SHAPE_KINDS))

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, _, d = h.shape
        c = self.side // 2
        grid = h.reshape(b, 2, c, 2, c, d).mean(dim=(2, 4)).reshape(b, len(CELLS), d)
        return self.cell(grid), self.glob(h.mean(dim=1))


def _vision_batch(
    rng: np.random.Generator, n: int
) -> tuple[list[Image.Image], dict[str, torch.Tensor]]:
    """Images with per-cell (presence, kind, colour) and global (type, digit, word) labels.

    Colours are uniform for every kind, so the tower learns no colour prior.
    """
    images: list[Image.Image] = []
    present = np.zeros((n, len(CELLS)), dtype=np.int64)
    kind = np.full((n, len(CELLS)), -100, dtype=np.int64)
    color = np.full((n, len(CELLS)), -100, dtype=np.int64)
    itype = np.zeros(n, dtype=np.int64)
    digit = np.full(n, -100, dtype=np.int64)
    word = np.full(n, -100, dtype=np.int64)
    colors = list(COLORS)
    for i in range(n):
        r = rng.random()
        if r < 0.6:
            m = int(rng.integers(0, len(CELLS) + 1))
            cells = rng.permutation(len(CELLS))[:m]
            objs = []
            for c in cells:
                k, col = int(rng.integers(len(SHAPE_KINDS))), int(rng.integers(len(colors)))
                off = (int(rng.integers(0, 5)), int(rng.integers(0, 5)))
                opacity = float(rng.uniform(VISION_OPACITY_FLOOR, 1.0))
                objs.append(SceneObject(SHAPE_KINDS[k], colors[col], int(c), opacity, off))
                present[i, c], kind[i, c], color[i, c] = 1, k, col
            images.append(render_scene(objs, rng))
        elif r < 0.8:
            d = int(rng.integers(10))
            images.append(
                render_digit(d, colors[int(rng.integers(8))], rng.uniform(0.2, 1.0), rng)[0]
            )
            itype[i], digit[i] = 1, d
        else:
            w = int(rng.integers(len(SHAPE_KINDS)))
            images.append(
                render_word(
                    SHAPE_KINDS[w], colors[int(rng.integers(8))], rng.uniform(0.2, 1.0), rng
                )[0]
            )
            itype[i], word[i] = 2, w
    labels = {
        "present": torch.from_numpy(present),
        "kind": torch.from_numpy(kind),
        "color": torch.from_numpy(color),
        "itype": torch.from_numpy(itype),
        "digit": torch.from_numpy(digit),
        "word": torch.from_numpy(word),
    }
    return images, labels


def _log(msg: str, t0: float) -> None:
    print(f"[{time.time() - t0:7.1f}s] {msg}", flush=True)


def answer_loss_backward(
    model: nn.Module,
    enc: dict[str, torch.Tensor],
    chunks: int,
    image_token_id: int,
    image_tokens: int,
) -> torch.Tensor:
    """Backpropagate the mean loss over all answer tokens of a batch, accumulated chunk by chunk
    (:func:`length_chunks`, so long and short rows are not padded together); returns that loss,
    detached."""
    n_answer = int((enc["labels"] != -100).sum())
    loss = torch.zeros(())
    for part in length_chunks(enc, chunks, image_token_id, image_tokens):
        # each chunk's mean, weighted by its share of the batch's answer tokens
        part_loss = model(**part).loss * (int((part["labels"] != -100).sum()) / n_answer)
        part_loss.backward()
        loss = loss + part_loss.detach()
    return loss


@contextmanager
def deterministic(threads: int) -> Iterator[None]:
    """Run with ``threads`` torch threads and deterministic algorithms (one seed and thread count
    give the same weights); restores both afterwards."""
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


def write_record(out: Path, t0: float, record: dict[str, Any]) -> Path:
    """Write ``training.json`` into ``out``: ``record``, the wall time since ``t0`` and the torch
    version (the checkpoint's provenance)."""
    wall = time.time() - t0
    record = {**record, "wall_seconds": round(wall, 1), "torch": torch.__version__}
    (out / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    _log(f"saved to {out} ({wall / 60:.1f} min)", t0)
    return out


def train_text(
    model: LlavaForConditionalGeneration, processor: LlavaProcessor, cfg: TrainConfig, t0: float
) -> float:
    """Stage 1: causal LM on the world's text (all tokens). Returns the last logged loss."""
    opt = _optimizer(model.parameters(), cfg.text_lr, cfg.weight_decay)
    loss_avg = float("nan")
    model.train()
    for step in range(cfg.text_steps):
        batch = text_corpus(cfg.batch, seed=cfg.seed, start=step * cfg.batch)
        enc = encode(processor, batch, with_answer=True, with_image=False)
        enc["labels"] = _lm_labels(enc)
        for g in opt.param_groups:
            g["lr"] = cfg.text_lr * _schedule(step, cfg.text_steps, cfg.warmup)
        loss = model(**enc).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_avg = loss.item() if step == 0 else 0.95 * loss_avg + 0.05 * loss.item()
        if step % 100 == 0 or step == cfg.text_steps - 1:
            _log(f"text   {step:5d}/{cfg.text_steps} loss {loss_avg:.4f}", t0)
    return loss_avg


def train_vision(model: LlavaForConditionalGeneration, cfg: TrainConfig, t0: float) -> float:
    """Stage 2: tower pretraining on classification heads. Returns the last logged loss."""
    tower = model.model.vision_tower
    side = tower.config.image_size // tower.config.patch_size
    torch.manual_seed(cfg.seed + 1)
    heads = _VisionHeads(tower.config.hidden_size, side)
    params = [*tower.parameters(), *heads.parameters()]
    opt = _optimizer(iter(params), cfg.vision_lr, cfg.weight_decay)
    rng = np.random.default_rng([cfg.seed, 211])

    def ce(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        # a batch may lack a label kind (no digit image, say): count it as zero, not NaN
        keep = target != -100
        if not keep.any():
            return logits.sum() * 0.0
        return nn.functional.cross_entropy(logits[keep], target[keep])

    n_kind = len(SHAPE_KINDS)
    loss_avg = float("nan")
    tower.train()
    for step in range(cfg.vision_steps):
        images, y = _vision_batch(rng, cfg.vision_batch)
        h = tower(pixel_values(images), output_hidden_states=True).hidden_states[-1]
        cell, glob = heads(h)
        loss = (
            ce(cell[..., :2].reshape(-1, 2), y["present"].reshape(-1))
            + ce(cell[..., 2 : 2 + n_kind].reshape(-1, n_kind), y["kind"].reshape(-1))
            + ce(cell[..., 2 + n_kind :].reshape(-1, len(COLORS)), y["color"].reshape(-1))
            + ce(glob[:, :3], y["itype"])
            + ce(glob[:, 3:13], y["digit"])
            + ce(glob[:, 13:], y["word"])
        )
        for g in opt.param_groups:
            g["lr"] = cfg.vision_lr * _schedule(step, cfg.vision_steps, cfg.warmup)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        loss_avg = loss.item() if step == 0 else 0.95 * loss_avg + 0.05 * loss.item()
        if step % 100 == 0 or step == cfg.vision_steps - 1:
            _log(f"vision {step:5d}/{cfg.vision_steps} loss {loss_avg:.4f}", t0)
    return loss_avg


def train_joint(
    model: LlavaForConditionalGeneration, processor: LlavaProcessor, cfg: TrainConfig, t0: float
) -> float:
    """Stage 3: the whole model on training-split items, loss on answers. Returns last loss."""
    decoder = model.model.language_model
    tower = list(model.model.vision_tower.parameters())
    lower = [p for layer in decoder.layers[: cfg.lower_layers] for p in layer.parameters()]
    frozen = list(decoder.embed_tokens.parameters()) if cfg.freeze_embeddings else []
    if cfg.lower_lr_scale == 0:
        frozen += lower
        lower = []
    special = {id(p) for p in [*tower, *lower, *frozen]}
    rest = [p for p in model.parameters() if id(p) not in special]
    groups = [{"params": rest, "scale": 1.0}, {"params": tower, "scale": cfg.tower_lr_scale}]
    if lower:
        groups.append({"params": lower, "scale": cfg.lower_lr_scale})
    for p in frozen:
        p.requires_grad_(False)
    opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    image_tokens = image_token_count(processor)
    image_token_id = processor.tokenizer.convert_tokens_to_ids(IMAGE)
    loss_avg = float("nan")
    model.train()
    for step in range(cfg.joint_steps):
        n_text = round(cfg.batch * cfg.joint_text_share)
        n_world = cfg.batch - n_text
        batch = demo_world("train", n_world, seed=cfg.seed, start=step * n_world)
        # text-only rehearsal continues the language stage's stream
        batch += text_corpus(n_text, seed=cfg.seed, start=(cfg.text_steps + step) * cfg.batch)
        enc = encode(processor, batch, with_answer=True)
        for g in opt.param_groups:
            g["lr"] = g["scale"] * cfg.lr * _schedule(step, cfg.joint_steps, cfg.warmup)
        opt.zero_grad(set_to_none=True)
        loss = answer_loss_backward(model, enc, cfg.chunks, image_token_id, image_tokens)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_avg = loss.item() if step == 0 else 0.95 * loss_avg + 0.05 * loss.item()
        if step % 100 == 0 or step == cfg.joint_steps - 1:
            _log(f"joint  {step:5d}/{cfg.joint_steps} loss {loss_avg:.4f}", t0)
    for p in frozen:
        p.requires_grad_(True)
    return loss_avg


def train(cfg: TrainConfig, out: str | Path, command: str | None = None) -> Path:
    """Run the three stages and save an HF checkpoint (model, processor, ``training.json``).

    Sets torch's thread count and deterministic mode for the run and restores both afterwards.
    """
    with deterministic(cfg.threads):
        return _train(cfg, Path(out), command)


def _train(cfg: TrainConfig, out: Path, command: str | None) -> Path:
    if not 0 <= cfg.lower_layers < cfg.model.layers:
        raise ValueError(
            f"lower_layers={cfg.lower_layers} must leave trainable decoder layers "
            f"(0 <= lower_layers < layers={cfg.model.layers})"
        )
    t0 = time.time()
    processor = build_processor(cfg.model)
    torch.manual_seed(cfg.seed)
    model = build_model(processor.tokenizer, cfg.model)
    n_params = sum(p.numel() for p in model.parameters())
    _log(f"model: {n_params / 1e6:.2f} M parameters, {cfg.model.layers} decoder layers", t0)
    losses = {
        "text": train_text(model, processor, cfg, t0) if cfg.text_steps else None,
        "vision": train_vision(model, cfg, t0) if cfg.vision_steps else None,
        "joint": train_joint(model, processor, cfg, t0) if cfg.joint_steps else None,
    }
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    record = {
        "command": command,
        "train_config": {**asdict(cfg), "model": cfg.model.to_dict()},
        "parameters": n_params,
        "final_losses": losses,
    }
    return write_record(out, t0, record)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR, help="checkpoint folder")
    parser.add_argument("--smoke", action="store_true", help="tiny model, a few steps")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (weights depend on it)"
    )
    parser.add_argument("--text-steps", type=int)
    parser.add_argument("--vision-steps", type=int)
    parser.add_argument("--joint-steps", type=int)
    parser.add_argument("--layers", type=int, help="decoder layers")
    parser.add_argument("--lower-layers", type=int, help="decoder layers with their own joint LR")
    parser.add_argument("--lower-lr-scale", type=float, help="their LR scale (0 = frozen)")
    parser.add_argument("--freeze-embeddings", action="store_true", default=None)
    args = parser.parse_args(argv)
    cfg = SMOKE if args.smoke else TrainConfig()
    cfg = replace(cfg, seed=args.seed, threads=args.threads)
    steps = {
        "text_steps": args.text_steps,
        "vision_steps": args.vision_steps,
        "joint_steps": args.joint_steps,
        "lower_layers": args.lower_layers,
        "lower_lr_scale": args.lower_lr_scale,
        "freeze_embeddings": args.freeze_embeddings,
    }
    cfg = replace(cfg, **{k: v for k, v in steps.items() if v is not None})
    if args.layers is not None:
        cfg = replace(cfg, model=replace(cfg.model, layers=args.layers))
    flags = " ".join(argv if argv is not None else sys.argv[1:])
    train(cfg, args.out, command=f"python -m tools.demo.train {flags}".strip())


if __name__ == "__main__":
    main()
