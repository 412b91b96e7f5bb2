"""Layer resume in the information-flow study (``interp.resume``, ``RunOptions.resume_layers``):
Δ from the forwards resumed at each window's first layer equals Δ from the full forwards, and the
skipped layers' bodies and the vision tower really do not run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import interp
from interp import scoring
from interp.datasets import demo_world
from interp.options import RunOptions
from interp.resume import why_not
from interp.studies.flow import information_flow
from interp.testing.tiny import ARCHITECTURES, shared_tiny_vlm
from interp.testing.tolerance import assert_close

# families whose decoder does something between its layer modules: declared fallbacks
FALLBACK = {"qwen3_vl", "qwen3_omni_moe_thinker", "gemma4", "mllama"}
EDGES = ("image>question", "image>last", "question>last")


def _flows(vlm: interp.VLM, n: int, edges=EDGES, batch_size: int = 4):
    samples = demo_world(split="test", n=n, seed=0)
    run = dict(split=None, batch_size=batch_size, progress_bar=False)
    full = information_flow(vlm, samples, edges=edges, resume_layers=False, **run)
    resumed = information_flow(vlm, samples, edges=edges, **run)
    return full, resumed


def _check_equal(full, resumed, scale: float) -> None:
    """Δ and the base totals agree within fp32 tolerance at ``scale`` (the size of a summed
    log-probability of the answer)."""
    assert resumed.windows == full.windows
    assert_close(
        torch.tensor(resumed.base), torch.tensor(full.base), dtype=torch.float32, scale=scale
    )
    for name, values in full.delta.items():
        assert_close(
            torch.tensor(resumed.delta[name]),
            torch.tensor(values),
            dtype=torch.float32,
            scale=scale,
        )


def test_demo_resume_equals_full_and_skips_layers() -> None:
    vlm = interp.load("demo")
    assert why_not(vlm, RunOptions()) is None
    calls = {"first": 0, "last": 0, "tower": 0}
    # a submodule of the layer: its body calls it, a skipped layer's does not
    hooks = [
        getattr(vlm.layers[i]._module, vlm.adapter.attention_module).register_forward_hook(
            lambda *_, k=k: calls.__setitem__(k, calls[k] + 1)
        )
        for i, k in ((0, "first"), (vlm.n_layers - 1, "last"))
    ]
    hooks.append(  # a resumed forward leaves the pixels out: the vision tower does not run
        vlm.hf.model.vision_tower.register_forward_hook(
            lambda *_: calls.__setitem__("tower", calls["tower"] + 1)
        )
    )
    samples = demo_world(split="test", n=6, seed=0)
    # forwards are counted: the clean forwards share no prefix (interp.prefix) here
    run = dict(
        split=None, batch_size=3, progress_bar=False, edges=("image>last",), share_prefix=False
    )
    try:
        full = information_flow(vlm, samples, resume_layers=False, **run)
        counted_full = dict(calls)
        calls.update(first=0, last=0, tower=0)
        resumed = information_flow(vlm, samples, **run)
    finally:
        for h in hooks:
            h.remove()
    batches, windows = 2, vlm.n_layers
    every = batches * (1 + windows)
    # full: (1 clean + one knockout per window) forwards per batch reach both layers and the tower
    assert counted_full == {"first": every, "last": every, "tower": every}
    # resumed: layer 0 and the tower run in the clean forward and the first window's only
    assert calls == {"first": batches * 2, "last": every, "tower": batches * 2}
    scale = float(np.abs(full.base).max())
    _check_equal(full, resumed, scale)
    assert np.abs(full.delta["image>last"]).max() > 1e-3  # the knockouts do change the answer


def test_demo_resume_windows_of_two() -> None:
    vlm = interp.load("demo")
    samples = demo_world(split="test", n=4, seed=1)
    run = dict(split=None, batch_size=4, progress_bar=False, window=2, stride=3)
    full = information_flow(vlm, samples, resume_layers=False, **run)
    resumed = information_flow(vlm, samples, **run)
    _check_equal(full, resumed, float(np.abs(full.base).max()))


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_tiny_family_resume(arch: str) -> None:
    vlm = shared_tiny_vlm(arch)
    reason = why_not(vlm, RunOptions())
    if arch in FALLBACK:  # declared: the full forwards run
        assert reason is not None and "layer_resume" in reason
        return
    assert reason is None, reason
    edges = ("question>last",) if vlm.adapter.fusion == "cross_attention" else EDGES
    full, resumed = _flows(vlm, 3, edges=edges, batch_size=2)
    _check_equal(full, resumed, max(float(np.abs(full.base).max()), 1.0))


def test_fallbacks_run_in_full() -> None:
    vlm = interp.load("demo")
    assert why_not(vlm, RunOptions(resume_layers=False)) == "resume_layers=False"
    assert why_not(vlm, RunOptions(store="somewhere", shard=(0, 2))) is None  # resumes too
    assert why_not(vlm, RunOptions(remote="local")) is None  # resumes on the server


def test_a_stored_sweep_resumes_and_is_served_from_its_store(tmp_path, monkeypatch) -> None:
    vlm = interp.load("demo")
    samples = demo_world(split="test", n=5, seed=2)
    run = dict(split=None, batch_size=2, progress_bar=False, edges=("image>last",))
    full = information_flow(vlm, samples, resume_layers=False, **run)
    stored = information_flow(vlm, samples, store=tmp_path / "flow", **run)
    _check_equal(full, stored, float(np.abs(full.base).max()))
    assert (tmp_path / "flow" / "windows").is_dir()  # the resumed path's own store
    assert not (tmp_path / "flow" / "base").exists()  # no per-window store of the full path

    def no_forward(*args, **kwargs):  # a stored run computes nothing again
        raise AssertionError("a forward ran although every result is stored")

    monkeypatch.setattr(scoring, "scored_forward", no_forward)
    again = information_flow(vlm, samples, store=tmp_path / "flow", **run)
    np.testing.assert_array_equal(again.base, stored.base)
    np.testing.assert_array_equal(again.delta["image>last"], stored.delta["image>last"])
    # other windows are another run: the store refuses to serve it, naming what differs
    with pytest.raises(interp.StoreError, match="windows"):
        information_flow(vlm, samples, store=tmp_path / "flow", window=2, **run)


SHARD_SCRIPT = """
import numpy as np, torch
torch.set_num_threads(1)
import interp
from interp import scoring
from interp.datasets import demo_world
from interp.studies.flow import information_flow
flow = information_flow(interp.load("demo"), demo_world(split="test", n=5, seed=2),
                        split=None, batch_size=2, progress_bar=False, edges=("image>last",),
                        store={store!r}, shard="auto")
np.save({out!r}, np.concatenate([flow.base[:, None], flow.delta["image>last"]], axis=1))
"""


def test_a_sharded_sweep_resumes_in_each_process(tmp_path: Path) -> None:
    """Two processes (ranked through RANK / WORLD_SIZE) each run half the batches of the resumed
    sweep into one store; both return the whole result, equal to the full forwards'."""
    procs = []
    for rank in range(2):
        script = SHARD_SCRIPT.format(store=str(tmp_path / "s"), out=str(tmp_path / f"r{rank}.npy"))
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"}
        procs.append(subprocess.Popen([sys.executable, "-c", script], env=env))
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    full = information_flow(
        interp.load("demo"),
        demo_world(split="test", n=5, seed=2),
        split=None,
        batch_size=2,
        progress_bar=False,
        edges=("image>last",),
        resume_layers=False,
    )
    want = np.concatenate([full.base[:, None], full.delta["image>last"]], axis=1)
    for rank in range(2):
        got = np.load(tmp_path / f"r{rank}.npy")
        assert_close(
            torch.tensor(got),
            torch.tensor(want),
            dtype=torch.float32,
            scale=float(np.abs(want).max()),
        )
    manifests = sorted(p.name for p in (tmp_path / "s" / "windows").glob("manifest*.json"))
    assert manifests == ["manifest-0-of-2.json", "manifest-1-of-2.json"]
