"""The engine: stock processors, composable conditions, samples, sampling, prefix removal, stores
(content addressing, locks, sharding), lazy loading, and the layout rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
import zlib

import numpy as np
import pytest
import torch
from PIL import Image
from transformers.generation.logits_process import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

import interp
from interp.conditions import Condition, diffusion_alphas_cumprod, prepare
from interp.datasets import demo_world
from interp.encoding import encode, question_mask
from interp.testing import (
    ARCHITECTURES,
    build_tiny,
    hf_forward,
    make_samples,
    random_image,
    shared_tiny_vlm,
)
from interp.testing.tolerance import assert_close, logprob_scale

STOCK_PROCESSORS = {
    "llava": "LlavaProcessor",
    "llava_siglip": "LlavaProcessor",
    "llava_next": "LlavaNextProcessor",
    "llava_onevision": "LlavaOnevisionProcessor",
    "qwen2_vl": "Qwen2VLProcessor",
    "qwen2_5_vl": "Qwen2_5_VLProcessor",
    "qwen3_vl": "Qwen3VLProcessor",
    "idefics3": "Idefics3Processor",
    "smolvlm": "SmolVLMProcessor",
    "gemma3": "Gemma3Processor",
    "paligemma": "PaliGemmaProcessor",
    "internvl": "InternVLProcessor",
    "mllama": "MllamaProcessor",
    "instructblip": "InstructBlipProcessor",
    "qwen2_5_omni_thinker": "Qwen2_5OmniProcessor",
    "qwen3_omni_moe_thinker": "Qwen3OmniMoeProcessor",
    "gemma4": "Gemma4Processor",
    "llava_next_video": "LlavaNextVideoProcessor",
}


# -- every family, stock processor, blind ---------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_blind_works_with_the_stock_processor_class(arch, samples):
    import transformers

    vlm = shared_tiny_vlm(arch)
    stock = getattr(transformers, STOCK_PROCESSORS[arch])
    assert type(vlm.processor) is stock  # exactly the stock class, not a subclass
    enc = encode(vlm, samples[:3], "blind")
    assert not enc.image_mask.any() and "pixel_values" not in enc.inputs
    states = interp.residual_stream(vlm, samples[:3], "blind", progress_bar=False)
    assert torch.isfinite(states).all()
    gen = interp.generate(vlm, samples[:3], "blind", max_new_tokens=2, progress_bar=False)
    assert len(gen) == 3
    # the blind prompt is the image prompt minus its image: same text tokens after the image
    full = encode(vlm, samples[:1], "full")
    text_full = full.input_ids[0][full.attention_mask[0].bool() & ~full.image_mask[0]]
    text_blind = enc.input_ids[0][enc.attention_mask[0].bool()]
    assert text_blind.tolist()[-5:] == text_full.tolist()[-5:]


# -- conditions ---------------------------------------------------------------------------------


def test_conditions_compose_and_round_trip():
    cases = {
        "full": "full",
        "blind+no_question": "blind+no_question",
        "no_question+blind": "blind+no_question",
        "null_question": "full+no_question",
        "null:black+ask:Please provide a response.": "null:black+ask:Please provide a response.",
        "distort:500": "distort:500",
        "instruct:You are a confused objects detector.": (
            "full+instruct:You are a confused objects detector."
        ),
        "full+no_prefix": "full+no_prefix",
        "swap:s3+no_question+no_prefix": "swap:s3+no_question+no_prefix",
    }
    for text, canonical in cases.items():
        cond = Condition.parse(text)
        assert str(cond) == canonical
        assert Condition.parse(str(cond)) == cond
    p0 = Condition.parse("blind+no_question")
    assert p0.kind == "blind" and p0.question is not None and not p0.uses_image


@pytest.mark.parametrize(
    "bad, match",
    [
        ("blind+null:black", "two image parts"),
        ("no_question+ask:x", "two question parts"),
        ("nope", "unknown condition part 'nope'"),
        ("null:grey", "bad argument"),
        ("distort:1000", "bad argument"),
        ("distort", "bad argument"),
        ("full++blind", "empty part"),
        ("ask:", "bad argument"),
        ("blind:x", "bad argument"),
    ],
)
def test_bad_conditions_are_typed_errors(bad, match):
    with pytest.raises(interp.ConditionError, match=match):
        Condition.parse(bad)


def test_condition_parts_give_the_inputs_they_promise(samples):
    vlm = shared_tiny_vlm("llava")
    s = samples[0]
    (p0,) = prepare([s], "blind+no_question", vlm.processor)
    assert p0.sample.question == "" and p0.images == []
    (ask,) = prepare([s], "null:white+ask:Please provide a response.", vlm.processor)
    assert ask.sample.question == "Please provide a response."
    assert np.asarray(ask.images[0]).min() == 255 and ask.images[0].size == s.load_image().size
    (ins,) = prepare([s], "instruct:Be brief.", vlm.processor)
    assert ins.sample.question == "Be brief. " + s.question
    assert np.array_equal(np.asarray(ins.images[0]), np.asarray(s.load_image()))


def test_null_noise_is_seeded_per_sample(samples):
    vlm = shared_tiny_vlm("llava")
    same_size = [interp.Sample("q", random_image(32, 32, i), id=f"n{i}") for i in range(2)]
    a, b = (p.images[0] for p in prepare(same_size, "null:noise", vlm.processor))
    again = prepare(same_size, "null:noise", vlm.processor)[0].images[0]
    assert a.size == b.size  # equal sizes: only the seed can make them differ
    assert not np.array_equal(np.asarray(a), np.asarray(b))
    assert np.array_equal(np.asarray(a), np.asarray(again))


def test_a_registered_condition_is_usable_everywhere(samples):
    """A user's condition in a few lines (the module docstring's example)."""
    from PIL import ImageFilter

    @interp.register_image_condition("blur_test", check=float)
    def blur(sample, arg, ctx):
        return [im.filter(ImageFilter.GaussianBlur(float(arg))) for im in sample.load_images()]

    @interp.register_question_condition("shout_test")
    def shout(text, arg, sample):
        return text.upper()

    try:
        vlm = shared_tiny_vlm("llava")
        got = interp.residual_stream(vlm, samples[:2], "blur_test:2+shout_test", progress_bar=False)
        by_hand = [
            interp.Sample(
                s.question.upper(), s.load_image().filter(ImageFilter.GaussianBlur(2.0)), id=s.id
            )
            for s in samples[:2]
        ]
        torch.testing.assert_close(got, interp.residual_stream(vlm, by_hand, progress_bar=False))
        with pytest.raises(interp.ConditionError, match="blur_test"):
            Condition.parse("blur_test:soft")
    finally:
        from interp.conditions import IMAGE_CONDITIONS, QUESTION_CONDITIONS

        IMAGE_CONDITIONS.pop("blur_test", None)
        QUESTION_CONDITIONS.pop("shout_test", None)


def test_vcd_noise_schedule_and_distortion(samples):
    """The schedule against an independent numpy computation; the distorted pixels are
    sqrt(ᾱ_t)·x0 + sqrt(1 − ᾱ_t)·ε with ε standard normal, seeded by the sample."""
    t = np.linspace(-6, 6, 1000)
    betas = 1 / (1 + np.exp(-t)) * (5e-3 - 1e-5) + 1e-5
    np.testing.assert_allclose(diffusion_alphas_cumprod().numpy(), np.cumprod(1 - betas), 1e-10)
    vlm = shared_tiny_vlm("llava_siglip")
    batch = [s for s in samples if s.load_image().size == (32, 32)][:2]
    clean = encode(vlm, batch).inputs["pixel_values"].double()
    abar = float(np.cumprod(1 - betas)[499])
    noisy = encode(vlm, batch, "distort:500").inputs["pixel_values"].double()
    eps = (noisy - abar**0.5 * clean) / (1 - abar) ** 0.5
    assert abs(float(eps.mean())) < 0.05 and abs(float(eps.std()) - 1) < 0.05
    assert not torch.allclose(eps[0], eps[1])  # each sample its own noise
    again = encode(vlm, batch[::-1], "distort:500").inputs["pixel_values"].double()
    torch.testing.assert_close(again[0], noisy[1])  # depends on the sample, not its row


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_distortion_does_not_depend_on_the_batch(arch, samples):
    vlm = shared_tiny_vlm(arch)
    one = interp.residual_stream(vlm, samples[:3], "distort:300", batch_size=1, progress_bar=False)
    three = interp.residual_stream(
        vlm, samples[:3], "distort:300", batch_size=3, progress_bar=False
    )
    assert_close(one, three)
    clean = interp.residual_stream(vlm, samples[:3], batch_size=3, progress_bar=False)
    assert (clean - three).abs().max() > 1e-4


# -- samples ------------------------------------------------------------------------------------


def test_images_as_arrays_and_tensors_equal_pil(samples):
    vlm = shared_tiny_vlm("qwen2_vl")
    pil = samples[:2]
    arrays = [interp.Sample(s.question, np.array(s.load_image()), s.answer, s.id) for s in pil]
    chw = [
        interp.Sample(
            s.question, torch.from_numpy(np.array(s.load_image())).permute(2, 0, 1), id=s.id
        )
        for s in pil
    ]
    floats = [
        interp.Sample(
            s.question, torch.from_numpy(np.asarray(s.load_image()) / 255.0).float(), id=s.id
        )
        for s in pil
    ]
    ref = interp.residual_stream(vlm, pil, progress_bar=False)
    for variant in (arrays, chw, floats):
        torch.testing.assert_close(interp.residual_stream(vlm, variant, progress_bar=False), ref)
    assert pil[0].fingerprint() == arrays[0].fingerprint()


def test_multi_image_samples_place_images_at_their_slots():
    vlm = interp.load("demo")
    a, b = random_image(32, 32, 1), random_image(32, 32, 2)
    s = interp.Sample(
        "the caption says leaf . {image} and {image} what color is the banana ?", [a, b]
    )
    enc = encode(vlm, [s])
    ids = enc.input_ids[0][enc.attention_mask[0].bool()].tolist()
    tok = vlm.tokenizer
    image = vlm.image_token_id
    starts = [i for i in range(len(ids)) if ids[i] == image and (i == 0 or ids[i - 1] != image)]
    assert len(starts) == 2  # two separate runs of image tokens, 16 each
    assert tok.decode(ids[starts[0] + 16 : starts[1]]).strip() == "and"
    assert tok.decode(ids[: starts[0]]).strip().endswith("the caption says leaf .")
    assert enc.image_mask.sum() == 32 and enc.inputs["pixel_values"].shape[0] == 2
    blind = encode(vlm, [s], "blind")
    text = tok.decode(blind.input_ids[0][blind.attention_mask[0].bool()])
    assert "leaf . and what color is the banana ?" in text
    with pytest.raises(interp.ImageTokenMismatchError, match="slot"):
        interp.Sample("one {image} slot", [a, b])


def test_duplicate_ids_are_refused_up_front():
    with pytest.raises(interp.DuplicateSampleError, match="'x'"):
        interp.ensure_samples([interp.Sample("a", id="x"), interp.Sample("b", id="x")])


def test_unknown_words_get_one_warning():
    vlm = interp.load("demo")
    known = interp.Sample("what color is the banana ?", random_image(32, 32, 0))
    odd = interp.Sample("what hue is the zorblax ?", random_image(32, 32, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        interp.generate(vlm, [known, odd], max_new_tokens=2, progress_bar=False)
    unk = [w for w in caught if issubclass(w.category, interp.UnknownTokenWarning)]
    assert len(unk) == 1
    assert "1 of 2 questions" in str(unk[0].message) and "zorblax" in str(unk[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        interp.generate(vlm, [known], max_new_tokens=2, progress_bar=False)
    assert not [w for w in caught if issubclass(w.category, interp.UnknownTokenWarning)]


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "idefics3", "paligemma"])
def test_question_positions_hold_the_question(arch, samples):
    vlm = shared_tiny_vlm(arch)
    enc = encode(vlm, samples[:3])
    mask = question_mask(vlm, enc)
    for row, s in enumerate(samples[:3]):
        text = vlm.tokenizer.decode(enc.input_ids[row][mask[row]])
        assert text.strip() == s.question.strip()


# -- generation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "temperature,top_k,top_p", [(0.7, None, None), (1.3, 5, None), (1.0, None, 0.8), (0.9, 10, 0.6)]
)
def test_sampled_tokens_equal_a_brute_force_loop_with_huggingfaces_warpers(
    temperature, top_k, top_p
):
    """Each step by hand: a plain HF forward of the sequence so far (no cache), HF's
    temperature / top-k / top-p warpers, and a draw from the row's own CPU generator seeded by
    (seed, sample id)."""
    vlm = interp.load("demo")
    samples = demo_world("test", n=3, seed=2, qtypes=["describe"])
    steps, seed = 5, 4
    got = interp.generate(
        vlm,
        samples,
        max_new_tokens=steps,
        do_sample=True,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        batch_size=1,
        progress_bar=False,
    )
    eos = vlm.hf.generation_config.eos_token_id
    eos = {eos} if isinstance(eos, int) else set(eos or [])
    for sample, ids in zip(samples, got.token_ids):
        enc = encode(vlm, [sample], "full")
        inputs, seq = dict(enc.inputs), enc.input_ids
        gen = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{sample.id}".encode()))
        want: list[int] = []
        for _ in range(steps):
            with torch.no_grad():
                out = vlm.hf(**{**inputs, "input_ids": seq, "attention_mask": torch.ones_like(seq)})
            z = TemperatureLogitsWarper(temperature)(None, out.logits[:, -1].float())
            if top_k:
                z = TopKLogitsWarper(top_k)(None, z)
            if top_p is not None:
                z = TopPLogitsWarper(top_p)(None, z)
            token = torch.multinomial(z.softmax(-1)[0], 1, generator=gen)
            want.append(int(token))
            if int(token) in eos:
                break
            seq = torch.cat([seq, token[None]], dim=1)
        assert ids == [t for t in want if t not in eos]


def test_sampling_is_seeded_per_sample_and_batch_independent():
    vlm = interp.load("demo")
    batch = demo_world("test", n=6, qtypes=["describe"])
    kw = dict(max_new_tokens=6, do_sample=True, temperature=1.5, progress_bar=False)
    a = interp.generate(vlm, batch, batch_size=6, seed=1, **kw)
    b = interp.generate(vlm, batch, batch_size=1, seed=1, **kw)
    c = interp.generate(vlm, batch[::-1], batch_size=4, seed=1, **kw)
    d = interp.generate(vlm, batch, batch_size=6, seed=2, **kw)
    assert a.token_ids == b.token_ids == c.token_ids[::-1]
    assert a.token_ids != d.token_ids
    greedy = interp.generate(vlm, batch, max_new_tokens=6, progress_bar=False)
    top1 = interp.generate(
        vlm, batch, max_new_tokens=6, do_sample=True, top_k=1, progress_bar=False
    )
    assert top1.token_ids == greedy.token_ids
    with pytest.raises(ValueError, match="temperature"):
        interp.generate(vlm, batch, do_sample=True, temperature=0, progress_bar=False)


def test_generation_ignores_the_models_generation_config(samples):
    """The library chooses every token: a repetition penalty in the model's generation config
    does not change greedy answers (HF's own generate would apply it)."""
    model, processor = build_tiny("llava")
    vlm = interp.load(model, processor)
    before = interp.generate(vlm, samples[:3], max_new_tokens=6, progress_bar=False)
    model.generation_config.repetition_penalty = 5.0
    after = interp.generate(vlm, samples[:3], max_new_tokens=6, progress_bar=False)
    assert before.token_ids == after.token_ids


def test_plain_generation_scores_are_the_logits_not_the_forced_row(samples):
    """``output_scores`` of plain decoding: step 0 equals the logits of a plain HF forward of the
    prompt, step 1 those of the prompt plus the first token (regression: the scores were read
    after the library had overwritten the logits with its one-hot 0/-inf row)."""
    vlm = shared_tiny_vlm("llava")
    batch = samples[:2]
    gen = interp.generate(vlm, batch, max_new_tokens=2, output_scores=True, progress_bar=False)
    for i, sample in enumerate(batch):
        enc = encode(vlm, [sample], "full")
        ref0 = hf_forward(vlm, enc).logits[0, -1]
        assert_close(gen.scores[i][0], ref0)
        if len(gen.token_ids[i]) == 0:
            continue
        inputs = dict(enc.inputs)
        first = torch.tensor([[gen.token_ids[i][0]]])
        inputs["input_ids"] = torch.cat([inputs["input_ids"], first], 1)
        inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones(1, 1)], 1).long()
        with torch.no_grad():
            ref1 = vlm.hf(**inputs).logits[0, -1]
        assert_close(gen.scores[i][1], ref1)


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl", "paligemma"])
def test_removing_the_prefix_scores_each_token_right_after_the_prompt(arch, samples):
    vlm = shared_tiny_vlm(arch)
    batch = samples[:3]
    targets = ["yellow banana two", "circle", "two three"]
    got = interp.score(vlm, batch, targets, "full+no_prefix", progress_bar=False)
    enc = encode(vlm, batch)
    logits = hf_forward(vlm, enc).logits[torch.arange(3), enc.last_index].float()
    logp = logits.log_softmax(-1)
    for row, target in enumerate(targets):
        ids = vlm.tokenizer(target, add_special_tokens=False)["input_ids"]
        assert_close(
            got.logprobs[row, : len(ids)], logp[row, ids], scale=logprob_scale(logits[row])
        )
    kept = interp.score(vlm, batch, targets, "full", progress_bar=False)
    assert_close(kept.logprobs[:, 0], got.logprobs[:, 0], scale=logprob_scale(logits))  # 1st same
    with pytest.raises(interp.ConditionError, match="no_prefix"):
        interp.generate(vlm, batch, "full+no_prefix", progress_bar=False)


# -- stores -------------------------------------------------------------------------------------


def test_store_recomputes_samples_whose_inputs_changed(tmp_path, monkeypatch):
    """Same ids, other images: the store must not serve the old states."""
    vlm = shared_tiny_vlm("llava")
    first = make_samples(4, seed=0)
    a = interp.residual_stream(vlm, first, store=tmp_path, progress_bar=False)
    changed = make_samples(4, seed=0)
    changed[2] = interp.Sample(changed[2].question, random_image(40, 48, 99), id=changed[2].id)
    import interp.residual as residual_module

    seen: list[list[str]] = []
    original = residual_module.trace_states

    def counting(vlm_, batch, *args, **kwargs):
        seen.append([str(s.id) for s in batch.samples])
        return original(vlm_, batch, *args, **kwargs)

    monkeypatch.setattr(residual_module, "trace_states", counting)
    b = interp.residual_stream(vlm, changed, store=tmp_path, progress_bar=False)
    assert sum(seen, []) == ["s2"]  # only the changed sample ran
    fresh = interp.residual_stream(vlm, changed, progress_bar=False)
    torch.testing.assert_close(b, fresh, atol=0, rtol=0)
    assert not torch.equal(a[2], b[2]) and torch.equal(a[0], b[0])


def test_store_refuses_other_runs_and_a_second_writer(tmp_path):
    vlm = shared_tiny_vlm("llava")
    batch = make_samples(2)
    interp.residual_stream(vlm, batch, layers=[1], store=tmp_path, progress_bar=False)
    with pytest.raises(interp.StoreError, match="layers.*overwrite"):
        interp.residual_stream(vlm, batch, layers=[2], store=tmp_path, progress_bar=False)
    redo = interp.residual_stream(
        vlm, batch, layers=[2], store=tmp_path, overwrite=True, progress_bar=False
    )
    assert redo.shape == (2, 1, vlm.d_model)
    holder = textwrap.dedent(
        f"""
        import sys, time
        from interp.store import ResultStore
        store = ResultStore({str(tmp_path)!r}, {{"measurement": "other"}}, overwrite=False)
        print("holding", flush=True)
        time.sleep(30)
        """
    )
    other = tmp_path / "other"
    other.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", holder.replace(str(tmp_path), str(other))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "holding"
        with pytest.raises(interp.StoreLockedError, match="another process"):
            interp.residual_stream(vlm, batch, store=other, progress_bar=False)
    finally:
        proc.kill()
        proc.wait()
    # the lock dies with its process
    interp.residual_stream(vlm, batch, store=other, overwrite=True, progress_bar=False)


SHARD_SCRIPT = """
import torch
torch.set_num_threads(1)
import interp
from interp.datasets import demo_world
from interp.testing import tiny_vlm
vlm = tiny_vlm("llava")
states = interp.residual_stream(vlm, demo_world("test", n=9), store={store!r}, shard="auto",
                                batch_size=2, progress_bar=False)
torch.save(states, {out!r})
"""


def test_two_processes_share_a_store_and_give_the_single_process_result(tmp_path):
    """Two CPU processes, ranked through RANK / WORLD_SIZE as accelerate launch and torchrun do,
    each compute half the samples; both return the merged result, equal to one process."""
    store = tmp_path / "store"
    procs = []
    for rank in range(2):
        script = SHARD_SCRIPT.format(store=str(store), out=str(tmp_path / f"r{rank}.pt"))
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"}
        procs.append(subprocess.Popen([sys.executable, "-c", script], env=env))
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    single = interp.residual_stream(
        shared_tiny_vlm("llava"), demo_world("test", n=9), batch_size=2, progress_bar=False
    )
    for rank in range(2):
        torch.testing.assert_close(torch.load(tmp_path / f"r{rank}.pt"), single, atol=0, rtol=0)
    manifests = sorted(p.name for p in store.glob("manifest*.json"))
    assert manifests == ["manifest-0-of-2.json", "manifest-1-of-2.json"]
    counts = [
        len(sum((s["keys"] for s in json.loads((store / m).read_text())["shards"]), []))
        for m in manifests
    ]
    assert counts == [5, 4]  # batches of 2: process 0 takes batches 0, 2, 4 (5 samples)


def test_a_sharded_run_waits_for_and_detects_a_missing_process(tmp_path):
    vlm = shared_tiny_vlm("llava")
    import interp.runner as runner

    with pytest.raises(interp.StoreError, match="process 1/2 is not running"):
        runner.run(
            vlm,
            make_samples(4),
            runner.Job("residual_stream", {"layers": [1]}),
            lambda chunk: ({"x": torch.zeros(len(chunk), 1)}, [{} for _ in chunk]),
            batch_size=2,
            store=tmp_path,
            shard=(0, 2),
            progress_bar=False,
            wait_timeout=5.0,
            idle_timeout=1.0,
        )


# -- lazy loading -------------------------------------------------------------------------------


def test_lazy_load_reads_weights_at_the_first_trace_and_equals_the_eager_path(tmp_path):
    model, processor = build_tiny("llava")
    model.save_pretrained(tmp_path / "tiny")
    processor.save_pretrained(tmp_path / "tiny")
    samples = make_samples(3)
    for source in ("demo", str(tmp_path / "tiny")):
        lazy = interp.load(source, dispatch=False)
        eager = interp.load(source)
        assert not lazy.dispatched
        assert (lazy.n_layers, lazy.d_model, lazy.image_token_id) == (
            eager.n_layers,
            eager.d_model,
            eager.image_token_id,
        )
        batch = demo_world("test", n=3) if source == "demo" else samples
        got = interp.residual_stream(lazy, batch, progress_bar=False)
        assert lazy.dispatched
        torch.testing.assert_close(got, interp.residual_stream(eager, batch, progress_bar=False))
        g1 = interp.generate(lazy, batch, max_new_tokens=3, progress_bar=False)
        g2 = interp.generate(eager, batch, max_new_tokens=3, progress_bar=False)
        assert g1.token_ids == g2.token_ids
    remote = interp.load("demo", remote=True)
    assert not remote.dispatched and remote.n_layers == 12


def test_a_checkpoint_loads_with_its_own_forwards_not_hub_kernels(tmp_path):
    # transformers >= 5.25 kernelizes at load unless told not to; HF's own flag is the reference
    model, processor = build_tiny("llava")
    model.save_pretrained(tmp_path / "tiny")
    processor.save_pretrained(tmp_path / "tiny")
    for vlm in (interp.load(str(tmp_path / "tiny")), interp.load("demo")):
        assert vlm.hf.use_kernels is False
        assert getattr(vlm.hf, "_kernels_mode", None) is None


# -- layout rules (the import rules live in tests/core/test_architecture.py) ------------------


def test_the_model_does_not_import_the_encoding():
    """The calls go encoding → model (encode uses the VLM's processor and adapter); the model
    module names ``Encoding`` in annotations only, so there is no import circle."""
    code = "import sys, interp.model; print('interp.encoding' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_protocols_live_together():
    """Intervention and Decoding are defined in interp.edits, re-exported where users import them."""
    from interp import edits, generation

    assert interp.Decoding is edits.Decoding is generation.Decoding
    assert interp.Intervention is edits.Intervention
    assert edits.Decoding.__module__ == "interp.edits"


def test_images_change_the_hash_used_by_stores():
    a = interp.Sample("q", random_image(8, 8, 0), id="x")
    b = interp.Sample("q", random_image(8, 8, 1), id="x")
    assert a.fingerprint() != b.fingerprint()
    c = interp.Sample("q", Image.fromarray(np.asarray(a.image)), id="x")
    assert a.fingerprint() == c.fingerprint()


def test_jaxtyping_annotations_are_checked_at_run_time():
    """The suite's import hook checks shapes: a wrong one fails the call (see conftest.py)."""
    from jaxtyping import TypeCheckError

    from interp.encoding import last_positions
    from probes.tvi import tvi

    with pytest.raises(TypeCheckError):
        last_positions(torch.ones(4, dtype=torch.long))  # [seq] instead of [batch, seq]
    with pytest.raises(TypeCheckError):
        tvi(np.zeros((3, 5)), 2, weights=np.ones(4))  # weights must have one entry per layer


def test_teacher_forced_batches_keep_their_question_positions(samples):
    """Positions edits see in scoring (prompt + appended target) still find the question."""
    from interp.edits import Batch, EditContext
    from interp.encoding import append_targets, target_ids

    vlm = shared_tiny_vlm("llava")
    batch = samples[:3]
    enc = encode(vlm, batch)
    ext, _, _ = append_targets(vlm, enc, target_ids(vlm, [s.answer for s in batch]))
    ctx = EditContext(
        vlm, Batch(vlm, enc, batch, Condition.parse("full"), "score", traced=ext), None
    )
    mask = ctx.positions("question")
    for row, s in enumerate(batch):
        assert vlm.tokenizer.decode(ext.input_ids[row][mask[row]]).strip() == s.question
