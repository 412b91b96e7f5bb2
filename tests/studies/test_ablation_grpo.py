"""GRPO with LoRA (the no-image ablation paper's mitigation) on a tiny LLaVA: the reward is the
judge's accuracy by hand, training changes only the language model's q/v projections of a copy,
and bad input is refused before any training."""

from __future__ import annotations

import pytest
import torch

from interp.errors import EmptyInputError
from interp.studies.ablation import grpo_lora
from interp.studies.ablation.grpo import accuracy_reward
from interp.testing import make_samples, shared_tiny_vlm

pytest.importorskip("trl")
pytest.importorskip("peft")


def test_the_reward_is_the_judges_accuracy_by_hand():
    samples = make_samples(3, seed=1)
    reward = accuracy_reward(lambda p, s: p.strip() == s.answer, samples)
    completions = [
        [{"role": "assistant", "content": samples[0].answer}],
        [{"role": "assistant", "content": "nothing"}],
        samples[2].answer,  # a plain-text completion
    ]
    assert reward(completions, sample_index=[0, 1, 2]) == [1.0, 0.0, 1.0]
    assert reward(completions[:1], sample_index=[1]) == [0.0]  # judged against its own sample


def test_training_changes_only_the_language_models_q_and_v_of_a_copy():
    vlm = shared_tiny_vlm("llava")
    before = {k: v.clone() for k, v in vlm.hf.state_dict().items()}
    samples = make_samples(4, seed=2)
    run = grpo_lora(
        vlm,
        samples,
        steps=2,
        num_generations=2,
        max_completion_length=3,
        learning_rate=0.5,
        judge=lambda p, s: len(p) % 2 == 0,  # a reward with spread on a random model
    )
    assert run.steps == 2 and len(run.history) == 2 and run.seconds > 0
    for k, v in vlm.hf.state_dict().items():  # the original is untouched
        assert torch.equal(v, before[k]), k
    after = run.vlm.hf.state_dict()
    assert set(after) == set(before)  # the adapter is merged: no LoRA weights remain
    changed = {k for k in before if not torch.equal(after[k], before[k])}
    assert changed, "no weight moved"
    for k in changed:
        assert "language_model" in k and (".q_proj." in k or ".v_proj." in k), k


def test_bad_input_is_refused_before_training():
    vlm = shared_tiny_vlm("llava")
    samples = make_samples(2, seed=3)
    with pytest.raises(ValueError, match="num_generations >= 2"):
        grpo_lora(vlm, samples, num_generations=1)
    with pytest.raises(EmptyInputError, match="no answer"):
        grpo_lora(vlm, [s.__class__(s.question, s.image, None, s.id) for s in samples])
