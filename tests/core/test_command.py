"""The command scaffold (:mod:`interp.command`): what a study declares is what ``interp --help``
shows, and the outputs helper writes what pandas and matplotlib write."""

from __future__ import annotations

import argparse

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from PIL import Image

from interp.command import DPI, Outputs, UsageError, at_least, int_list
from interp.help import declared_command
from interp.study_registry import commands, load


@pytest.mark.parametrize("command", commands(), ids=lambda c: c.name)
def test_the_static_help_is_what_the_command_registers(command):
    """``interp --help`` reads name, help and aliases from the source; registering the command
    gives the same, and the entry-point key is one of the command's names."""
    assert command.error is None, command.error
    declared = declared_command(command.register)
    assert declared is not None, command.register
    name, text, aliases = declared
    sub = argparse.ArgumentParser().add_subparsers()
    load(command.register)(sub)
    parser = sub.choices[name]
    assert [a.help for a in sub._choices_actions] == [text]
    assert {n for n, p in sub.choices.items() if p is parser} == {name, *aliases}
    assert command.name in (name, *aliases)


def test_outputs_write_what_pandas_and_matplotlib_write(tmp_path):
    frame = pd.DataFrame({"a": [1, 2]}, index=pd.Index(["x", "y"], name="k"))
    out = Outputs(tmp_path)
    out.csv(frame, "plain.csv")
    out.csv(frame, "labelled.csv", index_label="layer")
    out.csv(frame, "indexed.csv", index=True)
    assert (tmp_path / "plain.csv").read_text() == frame.to_csv(index=False)
    assert (tmp_path / "labelled.csv").read_text() == frame.to_csv(index_label="layer")
    assert (tmp_path / "indexed.csv").read_text() == frame.to_csv()
    fig = plt.figure(figsize=(2, 1))
    out.figure(fig, "fig.png")
    assert not plt.fignum_exists(fig.number)  # closed after saving
    assert Image.open(tmp_path / "fig.png").size == (2 * DPI, 1 * DPI)
    assert out.files == ["plain.csv", "labelled.csv", "indexed.csv", "fig.png"]


def test_option_helpers_refuse_with_the_option_named():
    assert int_list(" 1, 2,,3 ", "--seeds") == [1, 2, 3]
    with pytest.raises(UsageError, match=r"^--seeds takes comma-separated integers, got 'a'$"):
        int_list("a", "--seeds")
    at_least(2, "--cv", 2)
    with pytest.raises(UsageError, match=r"^--cv must be >= 2 folds, got 1$"):
        at_least(1, "--cv", 2, " folds")
