"""The test-suite's tolerances follow one rule (docs/conventions.md, Tolerances): a float
comparison is bit-exact (``atol=0``, ``assert_array_equal``, ``torch.equal``), rounding scaled with
what it compares (``interp.testing.tolerance.assert_close``), or a method's own approximation
stated with its reason (``approx_close(got, want, bound, why=...)``). A bare bound — ``atol=``
other than 0, as a literal or a name, or ``pytest.approx``'s ``abs=`` — is none of these."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from interp.testing.tolerance import (
    PCM16_STEP,
    approx_close,
    assert_close,
    combination_scale,
    logprob_scale,
    tolerance,
)

ROOT = Path(__file__).resolve().parents[2]
BARE = re.compile(r"\b(?:atol|abs)=(?!0(?:\.0)?\b)")

# files still holding a bare bound that an earlier form of this check (a literal atol= only) did
# not see: named constants (atol=ATOL) and pytest.approx(..., abs=...). To convert; the list may
# only shrink, and a file not on it may hold no bare bound.
NOT_YET = {
    "tests/demo/test_demo_omni_audit.py",
    "tests/families/test_qwen_internvl.py",
    "tests/interventions/test_image_edits.py",
    "tests/interventions/test_modal_edits.py",
    "tests/probes/test_distances.py",
    "tests/probes/test_proportions.py",
    "tests/probes/test_stats.py",
    "tests/studies/test_attribute_groups.py",
    "tests/studies/test_coe.py",
    "tests/studies/test_coe_read_at.py",
    "tests/studies/test_conflict.py",
    "tests/studies/test_conflict_trimodal.py",
    "tests/studies/test_drives_profiles.py",
    "tests/studies/test_drives_video.py",
    "tests/studies/test_reproduce.py",
}


def _with_a_bare_bound() -> set[str]:
    found = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "test_tolerances.py":
            continue
        if BARE.search(path.read_text()):
            found.add(path.relative_to(ROOT).as_posix())
    return found


def test_no_file_uses_a_bare_absolute_tolerance():
    new = _with_a_bare_bound() - NOT_YET
    assert not new, (
        f"{sorted(new)}: use assert_close (rounding, a scaled bound), approx_close(..., why=...) "
        "(a method's approximation) or an exact comparison"
    )


def test_the_list_of_files_to_convert_only_shrinks():
    converted = NOT_YET - _with_a_bare_bound()
    assert not converted, f"remove {sorted(converted)} from NOT_YET: they follow the rule now"


def test_the_check_sees_literal_and_named_bounds_and_lets_exact_ones_pass():
    bare = ["atol=1e-5", "atol=ATOL", "atol=2 * EPS", "abs=1e-6", "abs=TOL"]
    assert all(BARE.search(f"f(x, {b})") for b in bare)
    assert not any(BARE.search(f"f(x, {b})") for b in ("atol=0", "atol=0.0", "rtol=0", "abs=0"))


def test_an_approximation_states_its_bound_and_its_reason():
    approx_close([0.5, 1.0], [0.5 + PCM16_STEP / 2, 1.0], PCM16_STEP, why="16-bit PCM")
    with pytest.raises(AssertionError, match="16-bit PCM"):
        approx_close([0.5], [0.5 + 2 * PCM16_STEP], PCM16_STEP, why="16-bit PCM")
    with pytest.raises(ValueError, match="why"):
        approx_close([0.5], [0.5], 1e-3, why=" ")
    with pytest.raises(ValueError, match="positive"):
        approx_close([0.5], [0.5], 0.0, why="a grid")


def test_the_rule_imports_no_torch():
    import subprocess
    import sys

    code = "import sys, interp.testing.tolerance; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_the_bound_scales_with_the_compared_values():
    z = torch.tensor([1.0, -300.0, 2.0])
    assert tolerance(z) == 1e-5 * 300
    assert tolerance(torch.tensor([1e-3])) == 1e-5  # at least 1: no bound below ε
    assert tolerance(z.to(torch.bfloat16)) == 5e-2 * 300
    # a contrast (1 + α)·z − α·z′ at α = 1: the operands' scale, not the result's
    s = combination_scale([(2.0, z), (1.0, z)])
    assert s == 900
    assert_close(z + 2e-3, z, scale=s)  # 2e-3 <= 9e-3


def test_a_difference_over_the_bound_fails_and_says_the_bound():
    z = torch.tensor([10.0, 20.0])
    try:
        assert_close(z + 1e-3, z)  # 1e-3 > 1e-5 · 20
    except AssertionError as err:
        assert "0.0002" in str(err)
    else:
        raise AssertionError("a difference 5x over the bound passed")


def test_log_probabilities_scale_with_their_logits_and_arrays_keep_their_dtype():
    z = torch.tensor([[4.0, -8.0, 0.0]])
    lse = float(torch.logsumexp(z.double(), -1))
    assert_close(logprob_scale(z), 8.0 + lse)  # log p = z − logsumexp z: both operands
    assert tolerance(np.array([3.0])) == 1e-10 * 3  # a float64 array: float64's ε
    assert_close(np.array([3.0 + 1e-11]), np.array([3.0]))
    try:
        assert_close(np.array([3.0 + 1e-9]), np.array([3.0]))
    except AssertionError:
        pass
    else:
        raise AssertionError("a float64 difference 3x over the bound passed")
