"""The import graph of the project's packages (``interp``, ``interventions``, ``probes``), read
from the source with ``ast``: every import counts, at module level, inside a function or under
``if TYPE_CHECKING:``.

An edge ``a → b`` means module ``a`` names module ``b`` in an import: ``import b``,
``from b import name`` (``b`` the package when ``name`` is not a submodule), ``from . import b``.
Importing a submodule runs its package's ``__init__`` too, but the packages' ``__init__`` files are
lazy (PEP 562), so that is not counted as an edge to the package. A cycle is a strongly connected
component of more than one module.

The layers are those of ``docs/architecture.md``'s table, from the bottom up (:data:`LAYERS`,
which the architecture test holds to the table): a module may import its own layer and the
layers below it; an import of a higher layer is an *upward* import (:func:`upward`).

``python -m tools.imports`` prints the cycles and the upward imports.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("interp", "interventions", "probes")


class Layer(NamedTuple):
    """One row of the layers table: its name, its files and folders (paths from the repository
    root; a folder holds everything under it), what it holds (one line, Markdown), and whether
    the table lists a folder's modules and sub-packages one by one."""

    name: str
    paths: tuple[str, ...]
    purpose: str
    listed: bool = False


LAYERS: tuple[Layer, ...] = (
    Layer(
        "statistics",
        ("probes/",),
        "statistics and classifiers on arrays (numpy, scipy, scikit-learn); nothing of `interp`",
    ),
    Layer(
        "foundation",
        ("interp/errors.py", "interp/_lazy.py", "interp/reprs.py"),
        "the typed errors every layer raises; the lazy public names of each package; the short summary every result prints (`Summary`: a `repr` of at most 20 lines, an HTML table in Jupyter)",
    ),
    Layer(
        "run options",
        ("interp/options.py", "interp/shards.py"),
        "`RunOptions`, the one object for every run option (batch size, store, shard, progress) and trace option (`remote`, `backend`) of every measurement and study; which share of the samples a process computes",
    ),
    Layer(
        "inputs",
        ("interp/samples.py", "interp/media.py", "interp/datasets/"),
        "`Sample` and its images, audio and video (loaded on first use); the demo world, the data readers and the papers' benchmarks (`registry.py`, a leaf; `catalog.py`, the look-ups over the built-in sets)",
    ),
    Layer(
        "adapters",
        ("interp/adapters/", "interp/prompts.py", "interp/region_layouts.py", "interp/thinker.py"),
        "per-family facts: module paths, image tokens, batching limits (`Adapter`, `register_adapter`); the default chat prompt the adapters' prompt builders start from; where each image token comes from in the image (`token_layout`); a full omni checkpoint's thinker; the modules of the folder: `base.py`: `Adapter` and its parts; `registry.py`: the table, a leaf; `families.py`: the built-in entries; `infer.py`: entries inferred from the config and module tree, and the load-time invariants; `pixels.py`: each layout's pixel rows and the processor output that holds them; `logits.py`: what a forward does to its head's output before it returns the logits, a scale and a soft-cap, `HeadTransform`",
    ),
    Layer(
        "conditions",
        ("interp/conditions/",),
        "the part registries (a leaf); `Condition` parsing; the built-in image, question, audio and video parts, each kind with its `register_*`; a sample as the model sees it under a condition (`prepare`)",
        listed=True,
    ),
    Layer(
        "encoding",
        ("interp/encoding/",),
        "the one-way stages drawn below, from a `Sample` to an `Encoding` and its named positions",
        listed=True,
    ),
    Layer(
        "old import paths",
        ("interp/positions.py", "interp/targets.py"),
        "names that moved into the encoding stages, importable where they were",
    ),
    Layer(
        "model",
        (
            "interp/model.py",
            "interp/configs.py",
            "interp/hub.py",
            "interp/sources.py",
            "interp/threads.py",
            "interp/layout_check.py",
            "interp/reach.py",
        ),
        "`load` → `VLM`; a model's configuration without its weights (`model_config`, `config_only`); whether the Hugging Face hub can be reached (a hub id reads the local cache without it); the model sources, what a name given to `load` stands for (`ModelSource`, registered as entry points; the folder and hub-id source built in); the torch thread setting; an unchecked token layout checked on the loaded weights (the perturbation test, allowing for a convolutional merge's reach)",
    ),
    Layer(
        "edits and reads",
        ("interp/edits.py", "interp/tracing.py", "interp/plain.py", "interp/wire.py"),
        "the intervention protocol: `Intervention`, `Decoding`, `Batch`, `EditContext`; reads inside a trace; a measurement lowered to plain data before its trace opens, so the block runs here or on NDIF ([remote.md](remote.md)); the torch-only code every block calls (applying the lowered edits, a row of attention weights), which travels to the server by source",
    ),
    Layer(
        "token → region maps",
        ("interp/regions.py",),
        "`token_regions` → `TokenRegions`: boxes, views, occlusion grids per encoded row (see [regions.md](regions.md))",
    ),
    Layer(
        "the run loop",
        (
            "interp/runner.py",
            "interp/store.py",
            "interp/locks.py",
            "interp/outputs.py",
            "interp/prefix.py",
            "interp/resume.py",
        ),
        "keys, the resumable store and its file locks, batches, progress (used by the measurements only); a command's outputs, staged until the run succeeds; contexts that begin alike running their shared prefix once (prefix sharing, [performance.md](performance.md)); sweeps of windowed edits resuming each window from the clean forward's residual stream (layer resume)",
    ),
    Layer(
        "measurements",
        (
            "interp/residual.py",
            "interp/generation.py",
            "interp/contrast.py",
            "interp/prefix_generation.py",
            "interp/scoring.py",
            "interp/windows.py",
            "interp/attention.py",
            "interp/gradients.py",
        ),
        "the public functions every study calls: `residual_stream`, `generate_states`, `generate`, `score`, `score_contexts`, `score_windows` (a sweep of windowed edits with layer resume, here or on NDIF), `attention_weights`, `image_gradients`",
    ),
    Layer(
        "interventions",
        ("interventions/",),
        "the edits and decoding methods themselves, on the intervention protocol",
    ),
    Layer(
        "public names",
        ("interp/__init__.py",),
        "what `import interp` offers, each name imported on first use",
    ),
    Layer(
        "support",
        ("interp/demo/", "interp/testing/", "interp/figures.py", "interp/headlines.py"),
        "the demo models (`model.py`: their architecture, tokenizer and processor; `smol/`, `omni/`: the other two; `source.py`: their model source; the checkpoints), the conformance kit (tiny models, references and checks for this project's tests and a user's own adapter, intervention or study), shared figure helpers, headline numbers with their n and 95% interval (the audit's sections and the study commands' summaries)",
    ),
    Layer(
        "command line",
        (
            "interp/cli.py",
            "interp/command.py",
            "interp/data_spec.py",
            "interp/help.py",
            "interp/doctor.py",
            "interp/study_registry.py",
        ),
        "the `interp` entry point and the command scaffold every study's `cli.py` declares itself through; the `--data` option (its early checks, the samples it names); help texts; the model check; the study registry (each study's `StudyEntry`, found through the `interp.studies` entry points: its command, audit section, reproduce recipe and docs)",
    ),
    Layer(
        "studies",
        ("interp/studies/",),
        "one package per paper's analysis, each a command; the audit runs them all",
        listed=True,
    ),
)
"""The layers from the bottom up, each a name and its files and folders (paths from the
repository root; a folder holds everything under it). The same rows, in the same order, as the
table of ``docs/architecture.md``."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Every module of ``packages``: dotted name → file."""
    return {module_name(p): p for pkg in packages for p in sorted((ROOT / pkg).rglob("*.py"))}


def _absolute(path: Path, level: int, module: str | None) -> str:
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{module}" if module else package


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports (see the module docstring)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name:
                    out.add(name)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node.level, node.module) if node.level else (node.module or "")
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    out.add(sub)
                else:
                    target = base
                    while target and target not in known:
                        target = target.rpartition(".")[0]
                    if target:
                        out.add(target)
    out.discard(module_name(path))
    return out


def graph(packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """module → the project modules it imports."""
    known = modules(packages)
    return {name: imports(path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    component.add(w)
                    if w == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda c: sorted(c))


def layer_of(name: str, known: dict[str, Path] | None = None) -> int:
    """The index in :data:`LAYERS` of module ``name``: the row of the longest entry that is its
    file or a folder above it.

    Raises:
        KeyError: no layer holds the module (add it to :data:`LAYERS` and the doc's table).
    """
    path = (known or modules())[name].relative_to(ROOT).as_posix()
    best: tuple[int, int] | None = None
    for k, layer in enumerate(LAYERS):
        for entry in layer.paths:
            hit = path.startswith(entry) if entry.endswith("/") else path == entry
            if hit and (best is None or len(entry) > best[1]):
                best = (k, len(entry))
    if best is None:
        raise KeyError(f"no layer of LAYERS holds {name} ({path})")
    return best[0]


def upward(edges: dict[str, set[str]] | None = None) -> list[tuple[str, str]]:
    """The imports ``(importer, imported)`` whose imported module lies in a higher layer than
    the importer, sorted."""
    edges = graph() if edges is None else edges
    rank = ranks(edges)
    return sorted((a, b) for a, targets in edges.items() for b in targets if rank[b] > rank[a])


def ranks(edges: dict[str, set[str]]) -> dict[str, int]:
    """The layer index (:func:`layer_of`) of every module of the graph."""
    known = modules()
    return {name: layer_of(name, known) for name in edges}


DOC = ROOT / "docs" / "architecture.md"
MARK = "<!-- the layers table: generated from LAYERS"
BEGIN = MARK + " (python -m {module} --write) -->"
END = "<!-- end of the generated layers table -->"


def _where(layer: Layer) -> list[str]:
    """The paths a row names: each entry, or for a listed folder its modules and sub-packages."""
    out: list[str] = []
    for entry in layer.paths:
        folder = ROOT / entry
        if not (layer.listed and entry.endswith("/")):
            out.append(entry)
            continue
        for child in sorted(folder.iterdir()):
            if child.suffix == ".py" and child.stem != "__init__":
                out.append(f"{entry}{child.name}")
            elif (child / "__init__.py").exists():
                out.append(f"{entry}{child.name}/")
    return out


def imported_layers(edges: dict[str, set[str]] | None = None) -> list[list[int]]:
    """Per layer, the other layers its modules import (indices in :data:`LAYERS`, ascending):
    read from the import graph, not declared."""
    edges = graph() if edges is None else edges
    rank = ranks(edges)
    out: list[set[int]] = [set() for _ in LAYERS]
    for a, targets in edges.items():
        out[rank[a]] |= {rank[b] for b in targets} - {rank[a]}
    return [sorted(s) for s in out]


def layers_table() -> str:
    """The layers table of ``docs/architecture.md``, from :data:`LAYERS` and the import graph:
    a row per layer (its name, where it lives, what it holds, the layers it imports), between
    the markers :data:`BEGIN` and :data:`END`."""
    uses = imported_layers()
    lines = [
        BEGIN.format(module=module_name(Path(__file__).resolve())),
        "",
        "| layer | where | what it holds | imports |",
        "|---|---|---|---|",
    ]
    for layer, below in zip(LAYERS, uses, strict=True):
        where = ", ".join(f"`{path}`" for path in _where(layer))
        imported = ", ".join(LAYERS[k].name for k in below) or "nothing of the project"
        lines.append(f"| {layer.name} | {where} | {layer.purpose} | {imported} |")
    return "\n".join([*lines, "", END])


def write_doc(doc: Path = DOC) -> bool:
    """Put :func:`layers_table` in ``doc`` between its markers; whether the file changed."""
    text = doc.read_text()
    start = text.index(MARK)
    end = text.index(END, start) + len(END)
    new = text[:start] + layers_table() + text[end:]
    if new != text:
        doc.write_text(new)
    return new != text


def main(argv: list[str] | None = None) -> int:
    """Print the cycles and the upward imports; ``--write`` regenerates the layers table of
    ``docs/architecture.md``."""
    if "--write" in (sys.argv[1:] if argv is None else argv):
        print(f"{DOC.relative_to(ROOT)}: {'written' if write_doc() else 'unchanged'}")
        return 0
    edges = graph()
    found = cycles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} import edges")
    print(f"{len(found)} cycles")
    for c in found:
        print("  " + " ↔ ".join(sorted(c)))
    climbs = upward(edges)
    print(f"{len(climbs)} upward imports")
    known = modules()
    for a, b in climbs:
        print(f"  {a} ({LAYERS[layer_of(a, known)][0]}) → {b} ({LAYERS[layer_of(b, known)][0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
