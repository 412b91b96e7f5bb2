"""The loopback NDIF (:mod:`interp.testing.loopback`): a server process where this library cannot
be imported, reached through nnsight's own ``RemoteBackend`` client."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import interp
from interp.testing import build_tiny
from interp.testing.loopback import Loopback, local_repo_ids, loopback_ndif


@pytest.fixture(scope="session")
def ndif() -> Iterator[Loopback]:
    with loopback_ndif() as server:
        yield server


@pytest.fixture(autouse=True)
def _local_ids() -> Iterator[None]:
    with local_repo_ids():
        yield


@pytest.fixture(scope="session")
def saved_tiny(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[interp.VLM, interp.VLM]]:
    """``saved_tiny(arch)``: a tiny checkpoint of ``arch`` written to a folder (the key the server
    loads), loaded locally and for NDIF; once per architecture.

    Its processor is handed over rather than read back: Qwen2-VL's video processor needs
    torchvision, which this machine cannot import (the server stands in for it)."""
    made: dict[str, tuple[interp.VLM, interp.VLM]] = {}

    def load(arch: str) -> tuple[interp.VLM, interp.VLM]:
        if arch not in made:
            folder = tmp_path_factory.mktemp(arch)
            model, processor = build_tiny(arch)
            model.save_pretrained(folder)
            processor.image_processor.save_pretrained(folder)
            processor.tokenizer.save_pretrained(folder)
            (folder / "chat_template.jinja").write_text(processor.chat_template)
            local = interp.load(str(folder), processor=processor)
            made[arch] = local, interp.load(str(folder), processor=processor, remote=True)
        return made[arch]

    return load
