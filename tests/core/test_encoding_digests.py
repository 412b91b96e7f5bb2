"""``encode`` gives the same tensors and the same named positions as the stored digests of every
tiny architecture under every condition the suite uses (``tests/fixtures/encoding_digests.json``,
taken from the encoding path before it was split into stages; see
:mod:`tools.digests`). A difference is named by architecture, rows / condition and
field."""

from __future__ import annotations

import json

import pytest

from interp.testing.tiny import ARCHITECTURES, MEDIA_ARCHITECTURES
from tools.digests import FIXTURE, MADE_UNDER, dumps, fold
from tools.pins import check_made_under

STORED = json.loads(FIXTURE.read_text())
VERSION = STORED.pop(MADE_UNDER)


def _differences(stored: dict, found: dict) -> list[str]:
    out = [f"{key}: missing" for key in stored if key not in found]
    out += [f"{key}: not stored" for key in found if key not in stored]
    for key in sorted(set(stored) & set(found)):
        want, got = stored[key], found[key]
        if isinstance(want, dict) and isinstance(got, dict):
            out += [
                f"{key} {field}: {want.get(field)!r} -> {got.get(field)!r}"
                for field in sorted(set(want) | set(got))
                if want.get(field) != got.get(field)
            ]
        elif want != got:
            out.append(f"{key}: {str(want)[:200]!r} -> {str(got)[:200]!r}")
    return out


def test_every_architecture_is_stored():
    assert set(STORED) == {*ARCHITECTURES, *MEDIA_ARCHITECTURES}


@pytest.mark.parametrize("arch", [*ARCHITECTURES, *MEDIA_ARCHITECTURES])
def test_encode_matches_the_stored_digests(arch):
    # transformers' processors change between releases (5.25 dropped Qwen3-VL's outer vision
    # wrapper around a video): digests compare one stack with itself
    check_made_under(VERSION, "tests/fixtures/encoding_digests.json", "python -m tools.digests")
    found = {key: fold(dump) for key, dump in dumps(arch).items()}
    differences = _differences(STORED[arch], found)
    assert not differences, "\n".join(differences[:40])


def test_a_changed_field_is_named():
    stored = {"images/full": {"rows": [[0]], "encoding.input_ids": "a", "positions.last": "b"}}
    found = {"images/full": {"rows": [[0]], "encoding.input_ids": "c", "positions.last": "b"}}
    assert _differences(stored, found) == ["images/full encoding.input_ids: 'a' -> 'c'"]
    assert _differences(stored, {}) == ["images/full: missing"]
