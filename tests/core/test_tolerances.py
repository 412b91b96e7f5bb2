"""The test-suite's tolerances follow one rule (docs/conventions.md, Tolerances): a float
comparison is bit-exact (``atol=0``) or scaled with what it compares
(``interp.testing.tolerance``). Files written before the rule still pass bare ``atol=`` bounds;
they are listed here, and the list may only shrink."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from interp.testing.tolerance import assert_close, combination_scale, logprob_scale, tolerance

ROOT = Path(__file__).resolve().parents[2]
BARE = re.compile(r"\batol=(?!0\b)(?!0\.0\b)[0-9][0-9.e+-]*")

# files that still hold a bare absolute bound (to convert; never add one)
BARE_ATOL = {
}


def _with_bare_atol() -> set[str]:
    found = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "test_tolerances.py":
            continue
        if BARE.search(path.read_text()):
            found.add(path.relative_to(ROOT).as_posix())
    return found


def test_no_new_file_uses_a_bare_absolute_tolerance():
    new = _with_bare_atol() - BARE_ATOL
    assert not new, f"use interp.testing.tolerance.assert_close (a scaled bound) in {sorted(new)}"


def test_the_list_of_old_files_only_shrinks():
    converted = BARE_ATOL - _with_bare_atol()
    assert not converted, f"remove {sorted(converted)} from BARE_ATOL: they follow the rule now"


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
    import numpy as np

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
