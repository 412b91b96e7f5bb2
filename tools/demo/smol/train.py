"""Train the trained parts of ``demo-smol``: ``python -m tools.demo.smol.train --out DIR``.

Two stages from fixed seeds (one seed and thread count give the same weights):

1. vision: the SigLIP tower learns per-cell object presence, kind and colour, digits and written
   words through throw-away linear heads (the demo model's stage 2, colours uniform);
2. joint: tower, projector and LoRA adapters on the decoder's attention learn training-split items
   of the demo world (loss on the answer tokens only) in front of the frozen SmolLM2 decoder.

Nothing here teaches a colour prior: prior-bearing kinds are drawn in a uniformly random colour
(``counterfactual_share = 7/8``: the canonical colour 1 time in 8, like every other colour), and the
world's text-only colour facts (``fact_color``) and text corpus are left out. Whatever prior the
model shows comes from SmolLM2's pretraining. ``--smoke`` runs a few steps (for the tests).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import save_file
from torch import nn
from transformers import LlavaProcessor

from interp.datasets.render import COLORS
from interp.datasets.world import TRAIN_MIX, demo_world
from interp.demo.model import IMAGE, image_token_count
from interp.demo.smol import CHECKPOINT_DIR, TRAINED_FILE
from interp.demo.smol.model import (
    SmolModelConfig,
    add_adapters,
    build_model,
    build_processor,
    load_language_model,
)

from ..train import (
    TrainConfig,
    _log,
    _schedule,
    answer_loss_backward,
    deterministic,
    encode,
    train_vision,
    write_record,
)

if TYPE_CHECKING:
    from peft import PeftModel

TRAIN_QTYPES: tuple[str, ...] = tuple(q for q in TRAIN_MIX if q != "fact_color")
"""Question types of the joint stage: the training mixture without the text-only colour facts."""
UNIFORM_COLOURS = 1.0 - 1.0 / len(COLORS)
"""Counterfactual share that makes every colour equally likely for prior-bearing kinds."""


@dataclass(frozen=True)
class SmolTrainConfig:
    seed: int = 0
    vision_steps: int = 1500
    vision_batch: int = 96
    vision_lr: float = 3e-3
    joint_steps: int = 520
    batch: int = 16
    chunks: int = 2
    lr: float = 1e-3
    projector_lr_scale: float = 2.0
    tower_lr_scale: float = 0.3
    warmup: int = 40
    weight_decay: float = 0.01
    threads: int = 2
    # visibility range of the objects training questions are about (None: the world's defaults)
    opacity: tuple[float, float] | None = None
    model: SmolModelConfig = field(default_factory=SmolModelConfig)


SMOKE = SmolTrainConfig(vision_steps=3, vision_batch=8, joint_steps=2, batch=4, warmup=1)


def train_joint(
    model: nn.Module, processor: LlavaProcessor, cfg: SmolTrainConfig, t0: float
) -> tuple[PeftModel, float]:
    """Stage 2: tower, projector and LoRA adapters on answer tokens. Returns the peft-wrapped
    model and the final running loss."""
    torch.manual_seed(cfg.seed + 2)
    peft_model = add_adapters(model, cfg.model)
    tower = list(model.model.vision_tower.parameters())
    projector = list(model.model.multi_modal_projector.parameters())
    for p in [*tower, *projector]:
        p.requires_grad_(True)
    adapters = [p for n, p in peft_model.named_parameters() if "lora_" in n]
    groups = [
        {"params": adapters, "scale": 1.0},
        {"params": projector, "scale": cfg.projector_lr_scale},
        {"params": tower, "scale": cfg.tower_lr_scale},
    ]
    trainable = [p for g in groups for p in g["params"]]
    opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    image_tokens = image_token_count(processor)
    image_token_id = processor.tokenizer.convert_tokens_to_ids(IMAGE)
    loss_avg = float("nan")
    peft_model.train()
    for step in range(cfg.joint_steps):
        batch = demo_world(
            "train",
            cfg.batch,
            seed=cfg.seed,
            start=step * cfg.batch,
            qtypes=TRAIN_QTYPES,
            counterfactual_share=UNIFORM_COLOURS,
            opacity=cfg.opacity,
        )
        enc = encode(processor, batch, with_answer=True)
        for g in opt.param_groups:
            g["lr"] = g["scale"] * cfg.lr * _schedule(step, cfg.joint_steps, cfg.warmup)
        opt.zero_grad(set_to_none=True)
        loss = answer_loss_backward(peft_model, enc, cfg.chunks, image_token_id, image_tokens)
        nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        loss_avg = loss.item() if step == 0 else 0.9 * loss_avg + 0.1 * loss.item()
        if step % 20 == 0 or step == cfg.joint_steps - 1:
            _log(f"joint  {step:5d}/{cfg.joint_steps} loss {loss_avg:.4f}", t0)
    peft_model.eval()
    return peft_model, loss_avg


def trained_state(peft_model: nn.Module) -> dict[str, torch.Tensor]:
    """The trained tensors only: tower, projector and LoRA factors (keys of the bare Llava)."""
    out: dict[str, torch.Tensor] = {}
    for name, p in peft_model.named_parameters():
        if not p.requires_grad:
            continue
        key = name.removeprefix("base_model.model.")
        out[key] = p.detach().contiguous().clone()
    return out


def train(cfg: SmolTrainConfig, out: str | Path, command: str | None = None) -> Path:
    """Run both stages and write the trained parts, their config and ``training.json``."""
    with deterministic(cfg.threads):
        return _train(cfg, Path(out), command)


def _without_machine_paths(config: dict[Any, Any]) -> dict[Any, Any]:
    """The config without ``_name_or_path`` entries (where this machine kept the weights)."""
    return {
        k: _without_machine_paths(v) if isinstance(v, dict) else ("" if k == "_name_or_path" else v)
        for k, v in config.items()
    }


def _train(cfg: SmolTrainConfig, out: Path, command: str | None) -> Path:
    t0 = time.time()
    lm, tok = load_language_model()
    processor = build_processor(tok, cfg.model)
    torch.manual_seed(cfg.seed)
    model = build_model(lm, processor, cfg.model)
    del lm
    for p in model.parameters():
        p.requires_grad_(False)
    _log(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters", t0)
    vision_cfg = TrainConfig(
        seed=cfg.seed,
        vision_steps=cfg.vision_steps,
        vision_batch=cfg.vision_batch,
        vision_lr=cfg.vision_lr,
        warmup=cfg.warmup,
        weight_decay=cfg.weight_decay,
    )
    for p in model.model.vision_tower.parameters():
        p.requires_grad_(True)
    vision_loss = train_vision(model, vision_cfg, t0) if cfg.vision_steps else None
    peft_model, joint_loss = train_joint(model, processor, cfg, t0)
    state = trained_state(peft_model)
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / TRAINED_FILE))
    model_config = _without_machine_paths(model.config.to_dict())
    (out / "config.json").write_text(json.dumps(model_config, indent=2, sort_keys=True) + "\n")
    record = {
        "command": command,
        "train_config": {**asdict(cfg), "model": cfg.model.to_dict()},
        "train_qtypes": list(TRAIN_QTYPES),
        "counterfactual_share": UNIFORM_COLOURS,
        "trained_parameters": sum(v.numel() for v in state.values()),
        "final_losses": {"vision": vision_loss, "joint": joint_loss},
    }
    return write_record(out, t0, record)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR, help="checkpoint folder")
    parser.add_argument("--smoke", action="store_true", help="a few steps")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--vision-steps", type=int)
    parser.add_argument("--joint-steps", type=int)
    parser.add_argument("--lora-from-layer", type=int, help="first decoder layer with adapters")
    parser.add_argument(
        "--opacity", type=float, nargs=2, help="visibility range of training objects (lo hi)"
    )
    args = parser.parse_args(argv)
    cfg = SMOKE if args.smoke else SmolTrainConfig()
    cfg = replace(cfg, seed=args.seed, threads=args.threads)
    steps = {"vision_steps": args.vision_steps, "joint_steps": args.joint_steps}
    cfg = replace(cfg, **{k: v for k, v in steps.items() if v is not None})
    if args.opacity is not None:
        cfg = replace(cfg, opacity=tuple(args.opacity))
    if args.lora_from_layer is not None:
        cfg = replace(cfg, model=replace(cfg.model, lora_from_layer=args.lora_from_layer))
    flags = " ".join(argv if argv is not None else sys.argv[1:])
    out = Path(args.out).resolve()
    if out.is_relative_to(Path.cwd()):  # the record ships with the checkpoint: no machine paths
        flags = flags.replace(str(args.out), str(out.relative_to(Path.cwd())))
    train(cfg, args.out, command=f"python -m tools.demo.smol.train {flags}".strip())


if __name__ == "__main__":
    main()
