"""A loopback stand-in for NDIF, run as its own process (:mod:`interp.testing.loopback` starts
it): a check that a measurement or a custom intervention runs on NDIF, without NDIF.

It speaks the wire protocol nnsight's own ``RemoteBackend`` client speaks (``GET /subscribe``
websocket handing out a session id, ``POST /request`` with the JSON envelope and the serialized
trace, status updates and the saved values back on the websocket), and it treats a request as
NDIF's server does:

- this library cannot be imported here (``interp``, ``interventions`` and ``probes`` are blocked
  before anything else runs, and the repository is taken off ``sys.path``);
- the model is built from the request's model key alone (``Remotable.from_model_key``: the key
  names the nnsight class and the checkpoint), once per key;
- the payload is unpickled with NDIF's deserialization whitelist (a module outside it is refused)
  and the block runs with NDIF's execution whitelist on ``__import__``;
- the values marked saved come back, nothing else.

``GET /stats`` answers the request count and the model keys seen (round trips are counted by the
tests). Usage: ``python ndif_server.py`` (by path: importing it as ``interp.testing...`` would
import the library first) prints ``PORT <n>`` once it listens on 127.0.0.1.
"""

from __future__ import annotations

import base64
import builtins
import email.parser
import email.policy
import hashlib
import importlib
import io
import json
import os
import pickle
import socket
import struct
import sys
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.abc import MetaPathFinder
from pathlib import Path
from typing import Any

BLOCKED = ("interp", "interventions", "probes")


class _Blocked(MetaPathFinder):
    """Refuses this library's packages, as on a server where it is not installed."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed on the server)")


sys.meta_path.insert(0, _Blocked())
# run by path, Python puts this file's folder first on the path: its neighbours are the library's
_HERE = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p not in ("", ".") and str(Path(p).resolve()) != _HERE]

import torch  # noqa: E402
import zstandard  # noqa: E402
from nnsight.intervention.serialization import CustomCloudUnpickler  # noqa: E402
from nnsight.modeling.mixins.remotable import Remotable  # noqa: E402
from nnsight.schema.request import RequestModel  # noqa: E402
from nnsight.schema.response import ResponseModel, Status  # noqa: E402
from nnsight.tracing.tracer import _saves, dec, inc  # noqa: E402

# NDIF's published whitelists: (module, strict). Strict: that module only; else it and its
# submodules.
EXECUTION = [
    ("builtins", True),
    ("torch", False),
    ("collections", False),
    ("nnsight.intervention.envoy", False),
    ("time", False),
    ("numpy", False),
    ("sympy", False),
    ("nnterp", False),
    ("math", False),
    ("einops", False),
    ("urllib3", False),
    ("typing", False),
    ("_operator", True),
    ("operator", True),
    ("pandas", False),
    ("enum", False),
]
DESERIALIZATION = [
    ("pickle", False),
    ("cloudpickle", False),
    ("copyreg", False),
    ("nnsight.schema.request", True),
    ("nnsight.modeling.mixins.remoteable", True),
    ("nnsight.intervention.tracing.base", True),
    ("nnsight.intervention.interleaver", True),
    ("nnsight.intervention.batching", True),
    ("nnsight.modeling", False),
    *EXECUTION,
]
# nnsight 0.8.1 moved these since that list was published; they hold the same classes
# (the tracer, its serialized frame, the source-based function loader)
DESERIALIZATION += [
    ("nnsight.tracing", False),
    ("nnsight.intervention.tracer", True),
    ("nnsight.intervention.serialization", True),
]


def allowed(name: str, whitelist: list[tuple[str, bool]]) -> bool:
    return any(name == m or (not strict and name.startswith(m + ".")) for m, strict in whitelist)


class WhitelistUnpickler(CustomCloudUnpickler):
    """nnsight's unpickler, refusing every global outside the deserialization whitelist."""

    def find_class(self, module: str, name: str) -> Any:
        if not allowed(module, DESERIALIZATION):
            raise pickle.UnpicklingError(f"module {module!r} is not whitelisted ({name})")
        return super().find_class(module, name)


class ImportGuard:
    """While a request's block runs, ``import`` reaches whitelisted modules only."""

    def __init__(self) -> None:
        self.original = builtins.__import__

    def __call__(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:  # noqa: E501
        if level == 0 and not allowed(name, EXECUTION):
            raise ImportError(f"module {name!r} is not whitelisted")
        return self.original(name, globals, locals, fromlist, level)


def without_torchvision() -> None:
    """NDIF's servers have torchvision; where it cannot be imported (this machine) a processor
    whose video processor needs it loads without one (text and images only) — the model's inputs
    arrive as tensors, so the server's processor never processes anything."""
    try:
        import torchvision  # noqa: F401
    except Exception:  # a build that does not import with this torch counts as absent
        pass
    else:
        return
    from transformers import ProcessorMixin

    auto = importlib.import_module(
        "transformers.models.auto.video_processing_auto"
    ).AutoVideoProcessor
    load = auto.from_pretrained.__func__
    strict = ProcessorMixin.check_argument_for_proper_class

    def from_pretrained(cls: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return load(cls, *args, **kwargs)
        except ImportError:
            return None

    def check(self: Any, name: str, argument: Any) -> Any:
        return (
            None if name == "video_processor" and argument is None else strict(self, name, argument)
        )

    auto.from_pretrained = classmethod(from_pretrained)
    ProcessorMixin.check_argument_for_proper_class = check


STATS: dict[str, Any] = {"requests": 0, "model_keys": [], "errors": []}
MODELS: dict[str, Any] = {}
SESSIONS: dict[str, socket.socket] = {}
LOCK = threading.Lock()


def model_for(key: str) -> Any:
    with LOCK:
        if key not in MODELS:
            model = Remotable.from_model_key(key, dispatch=True)
            model._module.requires_grad_(False)  # as NDIF's deployments freeze the weights
            MODELS[key] = model
        return MODELS[key]


def run_request(envelope: dict, blob: bytes) -> dict:
    """Deserialize and run one request on the key's model; the saved values."""
    model = model_for(envelope["model_key"])
    model._remoteable_set_env(envelope.get("env") or {})
    tracer = RequestModel.deserialize(
        blob,
        model._remoteable_persistent_objects(),
        compress=bool(envelope.get("compress")),
        unpickler=WhitelistUnpickler,
    )
    guard = ImportGuard()
    inc()
    try:
        builtins.__import__ = guard
        try:
            tracer.execute(tracer.info.code)
        finally:
            builtins.__import__ = guard.original
        saved = _saves()
        return {k: v for k, v in tracer.info.frame.f_locals.items() if id(v) in saved}
    finally:
        dec()


# -- websocket frames (RFC 6455: server frames are unmasked) --------------------------------------


def send_frame(sock: socket.socket, payload: bytes, opcode: int) -> None:
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    sock.sendall(header + payload)


def drain(sock: socket.socket) -> None:
    """Read (and drop) the client's frames until it closes the connection."""
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/stats":
            return self._json(200, STATS)
        if self.path == "/subscribe" and "websocket" in self.headers.get("Upgrade", "").lower():
            accept = base64.b64encode(
                hashlib.sha1(
                    (
                        self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
                    ).encode()
                ).digest()
            ).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept)
            self.end_headers()
            self.wfile.flush()
            session = str(uuid.uuid4())
            SESSIONS[session] = self.connection
            send_frame(self.connection, json.dumps({"session_id": session}).encode(), 0x1)
            drain(self.connection)
            SESSIONS.pop(session, None)
            self.close_connection = True
            return
        self._json(404, {"detail": "not found"})

    def do_POST(self) -> None:
        if self.path != "/request":
            return self._json(404, {"detail": "not found"})
        body = self.rfile.read(int(self.headers["Content-Length"]))
        head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        fields = {
            part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()
        }
        envelope = json.loads(fields["data"])
        job = str(uuid.uuid4())
        with LOCK:
            STATS["requests"] += 1
            STATS["model_keys"].append(envelope["model_key"])
        self._json(200, ResponseModel(id=job, status=Status.RECEIVED).model_dump(mode="json"))
        sock = SESSIONS.get(envelope.get("session_id", ""))
        try:
            saves = run_request(envelope, fields["blob"])
            buffer = io.BytesIO()
            torch.save(saves, buffer, pickle_protocol=4)
            data = buffer.getvalue()
            if envelope.get("compress"):  # the client decompresses under its request's flag
                data = zstandard.ZstdCompressor(level=6).compress(data)
            done = ResponseModel(id=job, status=Status.COMPLETED, data=data)
            if sock is not None:
                send_frame(sock, done.pickle(), 0x2)
        except BaseException as error:  # the client gets the error, as NDIF sends it
            description = f"{type(error).__name__}: {error}"
            with LOCK:
                STATS["errors"].append(description)
            if os.environ.get("NDIF_LOOPBACK_TRACEBACK"):
                traceback.print_exc()
            failed = ResponseModel(id=job, status=Status.ERROR, description=description)
            if sock is not None:
                send_frame(sock, failed.model_dump_json().encode(), 0x1)


def main() -> None:
    torch.set_num_threads(1)
    without_torchvision()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
