"""The paper's mitigation: GRPO post-training with a LoRA adapter, the reward being accuracy on
items that need the image (its Sec. 2 and 6: GRPO with one LoRA adapter per variant on a 4 B VLM).

:func:`grpo_lora` runs TRL's ``GRPOTrainer`` with a PEFT LoRA adapter on the language model's
attention projections of a copy of the model; the adapter is merged and the trained copy comes
back as a :class:`interp.VLM`, so :func:`no_image_ablation` can measure the no-image reliance
before and after. GRPO (Shao et al., 2024): for each prompt, G completions are sampled; each
completion's advantage is its reward minus the group's mean reward, divided by the group's
standard deviation; the policy gradient weights each completion's token log-probabilities by its
advantage (TRL's defaults: no KL term, ``beta = 0``). The reward here is the judge's verdict, 1
for a right answer and 0 otherwise: accuracy. Needs the ``grpo`` extra (``trl``, ``peft``).
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from interp.errors import EmptyInputError, MissingExtraError
from interp.options import RunOptions, refuse_remote
from interp.reprs import Summary
from interp.samples import IMAGE_SLOT, Sample, ensure_samples

from .judge import Judge, _check_judge, _judged, default_judge

if TYPE_CHECKING:
    from interp.model import VLM

LORA_TARGETS = r".*language_model.*\.(q_proj|v_proj)"
"""The LoRA targets: the query and value projections of the language model's attention layers
(the vision tower is left alone)."""


@dataclass(repr=False)
class GRPOResult(Summary):
    """A GRPO run.

    Attributes:
        vlm: the trained copy (adapter merged), ready for every measurement.
        history: TRL's log, one row per logged step (``reward``, ``loss``, ``step_time`` ...).
        seconds: the training's wall time; ``steps``: optimiser steps.
    """

    vlm: VLM
    history: pd.DataFrame
    seconds: float
    steps: int

    def _repr_head(self) -> dict[str, Any]:
        return {"model": self.vlm.source, "steps": self.steps, "seconds": self.seconds}

    @property
    def seconds_per_step(self) -> float:
        return self.seconds / max(self.steps, 1)


def _completion_text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        content = completion[-1].get("content", "") if completion else ""
        if isinstance(content, list):
            return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        return str(content)
    return str(completion)


def accuracy_reward(judge: Judge, samples: Sequence[Sample]) -> Any:
    """The reward function TRL calls: 1.0 where ``judge(completion, sample)`` holds, else 0.0;
    the sample is found by the ``sample_index`` column of the training rows."""

    def reward(completions: list[Any], sample_index: list[int], **_: Any) -> list[float]:
        return [
            1.0 if _judged(judge, _completion_text(c), samples[int(i)]) else 0.0
            for c, i in zip(completions, sample_index)
        ]

    reward.__name__ = "accuracy"
    return reward


def _rows(samples: Sequence[Sample]) -> list[dict[str, Any]]:
    rows = []
    for i, s in enumerate(samples):
        images = s.load_images()
        if len(images) != 1 or s.question.count(IMAGE_SLOT) > 1:
            raise EmptyInputError(
                f"sample {s.id!r}: GRPO training takes items with exactly one image"
            )
        text = s.question.replace(IMAGE_SLOT, " ").strip()
        content = [{"type": "image"}, {"type": "text", "text": text}]
        rows.append(
            {
                "prompt": [{"role": "user", "content": content}],
                "image": images[0],
                "sample_index": i,
            }
        )
    return rows


def grpo_lora(
    vlm: VLM,
    samples: Sequence[Sample],
    *,
    steps: int = 100,
    prompts_per_step: int = 2,
    num_generations: int = 4,
    max_completion_length: int = 8,
    learning_rate: float = 1e-3,
    lora_rank: int = 8,
    lora_alpha: int = 16,
    temperature: float = 1.0,
    judge: Judge = default_judge,
    seed: int = 0,
    run: RunOptions | None = None,
    **options: Any,
) -> GRPOResult:
    """GRPO with LoRA on a copy of ``vlm`` (the original is not changed), rewarded by accuracy on
    ``samples`` (each one image and an ``answer``; the paper trains on items that need the
    image). Each step draws ``prompts_per_step`` items and samples ``num_generations``
    completions for each at ``temperature``.

    ``run`` (:class:`~interp.options.RunOptions`, its fields also as keywords) gives the
    trainer's progress bar (``progress_bar``, default off here); training runs on this
    machine's weights, so a remote run is refused.

    Raises:
        RemoteError: a remote run (``remote`` or ``backend`` set), before any training.
        MissingExtraError: ``trl`` or ``peft`` not installed (``pip install 'vlm-interp[grpo]'``).
        EmptyInputError: no samples, or a sample without an answer or with other than one image.
        ValueError: ``steps``, ``prompts_per_step`` < 1 or ``num_generations`` < 2.
    """
    opts = RunOptions.resolve(run if run is not None else RunOptions(progress_bar=False), **options)
    refuse_remote(
        opts.trace_options(),
        "grpo_lora",
        "it trains a copy of the weights on this machine",
        vlm=vlm,
    )
    progress_bar = opts.progress_bar
    samples = ensure_samples(samples)
    judge = _check_judge(judge)
    if steps < 1 or prompts_per_step < 1:
        raise ValueError(
            f"steps and prompts_per_step must be >= 1, got {steps}, {prompts_per_step}"
        )
    if num_generations < 2:
        raise ValueError(f"GRPO needs num_generations >= 2 (a group), got {num_generations}")
    if not samples:
        raise EmptyInputError("no samples to train on")
    missing = [s.id for s in samples if not s.answer]
    if missing:
        raise EmptyInputError(f"samples {missing[:3]} have no answer; the reward needs one")
    try:
        from datasets import Dataset
        from peft import LoraConfig
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as err:
        raise MissingExtraError(
            f"GRPO training needs trl and peft ({err.name} is missing): "
            "pip install 'vlm-interp[grpo]'"
        ) from err
    import interp

    # a fresh instance with the same weights: a deep copy would carry nnsight's instrumentation
    model = type(vlm.hf)(copy.deepcopy(vlm.hf.config))
    model.load_state_dict(vlm.hf.state_dict())
    model.to(device=vlm.hf.device, dtype=vlm.hf.dtype)
    data = Dataset.from_list(_rows(samples))
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=prompts_per_step * num_generations,
            num_generations=num_generations,
            max_completion_length=max_completion_length,
            max_steps=steps,
            learning_rate=learning_rate,
            temperature=temperature,
            logging_steps=1,
            report_to=[],
            save_strategy="no",
            use_cpu=str(model.device) == "cpu",
            seed=seed,
            disable_tqdm=not progress_bar,
        )
        lora = LoraConfig(r=lora_rank, lora_alpha=lora_alpha, target_modules=LORA_TARGETS)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=accuracy_reward(judge, samples),
            args=config,
            train_dataset=data,
            processing_class=vlm.processor,
            peft_config=lora,
        )
        if not progress_bar:  # without a bar the trainer prints every log line instead
            from transformers import PrinterCallback

            trainer.remove_callback(PrinterCallback)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    merged = trainer.model.merge_and_unload()
    merged.eval()
    history = pd.DataFrame([h for h in trainer.state.log_history if "reward" in h])
    trained = interp.load(merged, vlm.processor)
    return GRPOResult(trained, history, seconds, int(trainer.state.global_step))


__all__ = ["LORA_TARGETS", "GRPOResult", "accuracy_reward", "grpo_lora"]
