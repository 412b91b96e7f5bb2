"""Whether the Hugging Face hub can be reached, and what a load does without it: a hub id then
reads the local cache only (``local_files_only``), and fails at once instead of after the hub
client's retries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def looks_like_path(text: str) -> bool:
    return (
        text.startswith((".", "/", "~"))
        or text.count("/") > 1
        or os.sep != "/"
        and os.sep in text
        or "/" not in text
    )


_HUB: list[bool] = []


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub can be reached, checked once per process (a TCP connection
    to its host, name lookup included, within ``timeout`` seconds). ``HF_HUB_OFFLINE=1`` means
    no. Without network, hub ids then fail at once instead of after the hub client's retries."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    if not _HUB:
        import socket
        import threading
        from urllib.parse import urlparse

        from huggingface_hub import constants

        url = urlparse(constants.ENDPOINT)
        host, port = (
            url.hostname or "huggingface.co",
            url.port or (443 if url.scheme == "https" else 80),
        )
        answer: list[bool] = []

        def probe() -> None:
            try:
                socket.create_connection((host, port), timeout=timeout).close()
                answer.append(True)
            except OSError:
                answer.append(False)

        thread = threading.Thread(target=probe, daemon=True)  # the name lookup has no timeout
        thread.start()
        thread.join(timeout)
        _HUB.append(bool(answer and answer[0]))
    return _HUB[0]


def offline_kwargs(source: str) -> dict[str, Any]:
    """``local_files_only=True`` for a hub id when the hub cannot be reached (the local cache
    still serves it), else nothing."""
    if Path(source).expanduser().is_dir() or hub_reachable():
        return {}
    return {"local_files_only": True}


__all__ = ["hub_reachable", "looks_like_path", "offline_kwargs"]
