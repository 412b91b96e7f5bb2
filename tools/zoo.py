"""The zoo sweep: every type of transformers' multimodal mapping, classified by what the library does
with it, and ``docs/families.md`` generated from the result.

For each ``model_type`` of ``MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES`` (read at call time, so a new
transformers release shows up as new rows): the default config, with its text decoder shrunk to
:data:`TEXT_LAYERS` layers (the rest as transformers builds it), is resolved to an adapter
(:func:`interp.adapter_for`: a registered entry, the thinker of an omni checkpoint, or an entry
inferred by :mod:`interp.adapters.infer`), the model is built on the meta device (no memory), an
inferred entry's module paths are resolved on its tree, and every load-time invariant is checked.
A default config that declares its placeholder-token ids but leaves them None (Voxtral, MiniCPM-V)
gets stand-ins first, as every checkpoint of the type sets them; a default config the model does
not build from gets the fields it leaves unusable set
(:data:`~interp.testing.builders.zoo_configs.UNBUILT_DEFAULTS`); the row says so.
A type is *supported* when all of that holds; otherwise *refused* with the reason (the adapter's
refusal, the build error, or the failing invariant and the field to set).

Run ``python -m tools.zoo`` to rewrite ``docs/families.md``; ``tests/families/
test_zoo.py`` checks the file is in sync and asserts each row.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

TEXT_LAYERS = 2
DOC = Path(__file__).resolve().parents[1] / "docs" / "families.md"
# registered families whose forward parity (reads, generate, score, edits, decoding, batch
# invariance against plain HF) the tiny-model tests check (interp.testing.tiny's builders)
TESTED = (
    "llava",
    "llava_next",
    "llava_onevision",
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "idefics3",
    "smolvlm",
    "gemma3",
    "paligemma",
    "internvl",
    "mllama",
    "instructblip",
    "qwen2_5_omni_thinker",
    "qwen3_omni_moe_thinker",
    "gemma4",
    "llava_next_video",
    "qwen2_audio",
    "blip-2",
    "fuyu",
    "ovis2",
)


# refused layouts whose cause the check's reason cannot name: what the model's merge does (read
# from its transformers code), appended to the *layout* cell
UNMAPPED = {
    "deepseek_ocr2": "its image tokens are the 144 (or 256) learned queries its Qwen2-style "
    "encoder appends to the SAM features (DeepseekOcr2VisionModel), then a view separator: "
    "no grid to map, and with that encoder bypassed by the check no token reads the image",
    "molmo2": "get_image_features needs image_token_pooling (the patch indices each token "
    "pools, over a global view and overlapping crops) and image_grids, which only Molmo2's own "
    "image processor makes (it needs torchvision); no hand-cut stand-in is written",
}


@dataclass(frozen=True)
class Row:
    """One type's outcome."""

    model_type: str
    supported: bool
    adapter: str
    modalities: str
    layout: str
    parity: str
    reason: str
    real_tokenizer: str = ""

    def cells(self) -> list[str]:
        status = "supported" if self.supported else "refused"
        return [
            f"`{self.model_type}`",
            status,
            self.adapter,
            self.modalities,
            self.layout,
            self.parity,
            self.real_tokenizer,
            self.reason,
        ]


def mapping_types() -> list[str]:
    """The types of transformers' multimodal-LM mapping, in its order."""
    from transformers.models.auto import modeling_auto

    return list(modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    if "timm" in text:
        return "its vision tower needs timm (not installed here)"
    text = text.replace("|", "/")
    return f"{type(err).__name__}: {text[:110]}"


def shrink(config: Any) -> Any:
    """``config`` with its text decoder cut to :data:`TEXT_LAYERS` layers (per-layer lists cut
    alike); other sub-configs are left as they are."""
    text = config.get_text_config()
    n = getattr(text, "num_hidden_layers", None)
    if isinstance(n, int) and n > TEXT_LAYERS:
        text.num_hidden_layers = TEXT_LAYERS
        for attr in ("layer_types", "mlp_layer_types", "block_types"):
            value = getattr(text, attr, None)
            if isinstance(value, list) and len(value) == n:
                setattr(text, attr, value[:TEXT_LAYERS])
    return config


@contextlib.contextmanager
def _quiet() -> Any:
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def _tiny_config(model_type: str) -> Any:
    """The config of the tiny builder of ``model_type`` (the one the parity tests run), or None
    (some default configs leave a tower out: Gemma 4's has no vision config)."""
    from interp.testing.tiny import (
        ARCHITECTURES,
        FAMILY_ARCHITECTURES,
        MEDIA_ARCHITECTURES,
        build_tiny,
    )

    if model_type not in ARCHITECTURES + MEDIA_ARCHITECTURES + FAMILY_ARCHITECTURES:
        return None
    return build_tiny(model_type)[0].config


def _build(config: Any) -> torch.nn.Module:
    from transformers import AutoModelForMultimodalLM

    with torch.device("meta"):
        return AutoModelForMultimodalLM.from_config(config)


def classify(model_type: str) -> Row:
    """Build ``model_type`` tiny on meta and decide whether the library supports it (see the
    module docstring)."""
    from transformers import AutoConfig

    from interp.adapters.infer import complete, invariants
    from interp.adapters.registry import ADAPTERS, adapter_for
    from interp.errors import UnsupportedArchitectureError
    from interp.testing.builders.zoo_configs import set_unbuilt_defaults, set_unset_ids
    from interp.testing.zoo_parity import check as parity_check
    from interp.testing.zoo_parity import text_check
    from interp.thinker import inner_config, wrapper_of

    def refused(reason: str, adapter: str = "", modalities: str = "") -> Row:
        return Row(model_type, False, adapter, modalities, "", "", reason)

    with _quiet():
        try:
            whole = _tiny_config(model_type) or AutoConfig.for_model(model_type)
        except Exception as err:  # noqa: BLE001 - the reason is the row
            return refused(f"the default config does not build ({_short(err)})")
        config = inner_config(whole)
        filled = set_unset_ids(config)  # left None by the default, set by every checkpoint
        fixed = set_unbuilt_defaults(config)  # the model does not build from the default
        try:
            adapter = adapter_for(config)
        except UnsupportedArchitectureError as err:
            reason = str(err).split(" has no adapter: ", 1)[-1].split(". Nearest", 1)[0]
            return refused(reason)
        kinds = ", ".join(adapter.modalities)
        try:
            model = _build(shrink(config))
        except Exception as err:  # noqa: BLE001
            return refused(
                f"the default config does not build ({_short(err)})", adapter.name, kinds
            )
        try:
            adapter = complete(adapter, model)
        except UnsupportedArchitectureError as err:
            return refused(str(err).split(" — ", 1)[-1], adapter.name, kinds)
        failed = [c for c in invariants(adapter, model) if not c.ok]
        if failed:
            c = failed[0]
            return refused(f"{c.name} fails ({c.detail}); set {c.field}", adapter.name, kinds)
    layout = layout_cell(model_type, adapter)
    registered = config.model_type in ADAPTERS
    if registered and config.model_type in TESTED:
        parity = "tested"
    else:  # built tiny on CPU and run against plain HF (interp.testing.zoo_parity)
        with _quiet():
            processor, why = parity_check(model_type)
            text = text_check(model_type) if why else "not run"
        parity = f"not tested: {why}" if why else f"forward tested ({processor} processor)"
        if why and not text:  # text-only rows run at parity where the media steps fail
            parity = f"text tested; {parity}"
    name = adapter.name
    if wrapper_of(whole) is not None:
        name += " (thinker of the full checkpoint)"
    if filled:
        name += f"; {' / '.join(filled)} set as its checkpoints set it (None by default)"
    if fixed:
        name += (
            f"; {' / '.join(fixed)} set as a checkpoint sets it (unusable in the default config)"
        )
    return Row(model_type, True, name, kinds, layout, parity, "", real_tokenizer_cell(model_type))


def layout_cell(model_type: str, adapter: Any) -> str:
    """The *layout* column: ``verified`` where a test checks the entry's layout; otherwise the
    verdict of the check at load (:mod:`interp.layout_check`) on the type's tiny model and its
    borrowed processor (:func:`~interp.testing.builders.inferred.tiny_inferred`)."""
    if "image" not in adapter.modalities:
        return "no image"
    if adapter.no_layout:
        return "none (no spatial layout)"
    if adapter.layout_verified and adapter.token_layout is not None:
        return "verified"
    from interp.model import load
    from interp.testing.builders.inferred import ParityError, tiny_inferred
    from interp.testing.tiny import FAMILY_ARCHITECTURES, build_tiny

    try:
        with _quiet():
            if model_type in FAMILY_ARCHITECTURES:  # a written entry's own tiny builder
                model, processor = build_tiny(model_type)
                name = type(processor).__name__.removesuffix("Processor").lower()
            else:
                model, processor, name = tiny_inferred(model_type)
    except ParityError as err:
        note = f"; {UNMAPPED[model_type]}" if model_type in UNMAPPED else ""
        return f"refused (not checked: its tiny model does not build: {_short(err)}{note})"
    with _quiet():
        checked = load(model, processor).adapter
    if checked.layout_verified and checked.no_layout:
        return f"none at load (each image token reads the whole image; {name} processor)"
    if checked.layout_verified:
        _, _, pixels = checked.layout_checked.partition("pixel-space conditions stay refused: ")
        pixels = f"; pixel-space conditions refused: {pixels}" if pixels else ""
        return f"verified at load ({checked.token_layout.__name__}; {name} processor{pixels})"
    why = checked.layout_refusal.removeprefix("no layout passed the check on the loaded model: ")
    if model_type in UNMAPPED:
        why = f"{why}; {UNMAPPED[model_type]}"
    return f"refused at load ({why})".replace("|", "/")


def real_tokenizer_cell(model_type: str) -> str:
    """The conformance suite's checkpoints of ``model_type`` (tests/families/test_real_*.py: the
    real tokenizer, published template and settings), each marked exact or stand-in."""
    from .real_models import real_tokenizers_by_type

    pairs = real_tokenizers_by_type().get(model_type, [])
    cells = [f"{c.split(' (')[0]} ({'exact' if e else 'stand-in'})" for c, e in pairs]
    return "; ".join(dict.fromkeys(cells))  # llava_siglip reuses LLaVA-1.5's pieces


def sweep() -> list[Row]:
    """:func:`classify` over every type of the mapping."""
    return [classify(t) for t in mapping_types()]


def render(rows: list[Row]) -> str:
    """``docs/families.md``."""
    import transformers

    supported = sum(r.supported for r in rows)
    inferred = sum(r.supported and "inferred" in r.adapter for r in rows)
    forward = sum(r.parity.startswith("forward tested") for r in rows)
    tested = sum(r.parity == "tested" for r in rows)
    text = sum(r.parity.startswith("text tested") for r in rows)
    images = [r for r in rows if r.supported and "image" in r.modalities.split(", ")]
    refused = sum(r.layout.startswith("refused") for r in images)
    at_load = sum(r.layout.startswith("verified at load") for r in images)
    by_test = sum(r.layout == "verified" for r in images)
    placeless = sum(r.layout.startswith("none") for r in images)
    # tiny_inferred's probe: the borrowed processor's image inputs do not reach the feature site
    takes_none = [
        f"`{r.model_type}`" for r in images if "does not take its image processor's" in r.parity
    ]
    unrun = f" (not {', '.join(takes_none)}: its tiny model takes no image)" if takes_none else ""
    head = [
        "# Families: every type of transformers' multimodal mapping",
        "",
        "Generated by `python -m tools.zoo` from the sweep (`tools/zoo.py`);",
        "`tests/families/test_zoo.py` keeps it in sync. For each type of transformers "
        f"{transformers.__version__}'s",
        "`MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES`: its default config (a family with a tiny "
        "builder: the builder's),",
        f"text decoder cut to {TEXT_LAYERS} layers, is resolved to an adapter, built on the "
        "meta device and checked by",
        "the load-time invariants (the layer path holds the decoder layers, the final norm "
        "feeds the head, each",
        "feature site resolves).",
        "",
        f"**{supported} of {len(rows)} types supported** ({inferred} through an entry inferred "
        f"from the config and module tree); forward parity with plain Hugging Face: {tested} "
        f"by the tiny-model tests, {forward} by the zoo's checks; text-only rows on {text} more.",
        f"Image layouts verified on {by_test + at_load} of the {len(images)} supported image "
        f"types ({by_test} by a layout test, {at_load} by the check at load); {placeless} "
        f"have image tokens with no place in the image; {refused} refused.",
        "",
        "- *layout*: `verified` — pixel-space conditions (`distort` ...), token regions, "
        "attribution maps and region",
        "  edits placed by them run, the layout being tested against the stock processor; "
        "`verified at load (L; X processor)` — the",
        "  same, the layout `L` having passed the generic check every load runs on a layout "
        "no test checks (`interp/layout_check.py`:",
        "  the vision blocks bypassed, one region of the image redrawn at a time, the changed "
        "image tokens compared with `L`'s",
        "  boxes, and the pixel rows `distort` edits checked) on the type's tiny model with "
        "the tiny processor X; a checkpoint's",
        "  own processor is checked again when it is loaded; `none at load` — the check "
        "found every image token changed by",
        "  redrawing any corner of the image (a resampler, learned queries): pixel-space "
        "conditions run, token regions raise",
        "  `NoSpatialLayoutError`; `refused` — those features raise `LayoutNotMappedError` naming",
        "  the type (and the check's reason) before any compute; reads, scores, generation "
        "and token-level edits run.",
        "- *conditions*: `tests/families/test_condition_matrix.py` runs each kind on the tiny "
        f"model of each of the {len(images)} supported",
        f"  image types{unrun}:",
        "  `full`, `blind`, `null:*` and `swap:*` run on every type, at parity with plain "
        "Hugging Face; `distort:<t>` (VCD's",
        "  amateur, and `SwapImage` / `Patch` from a `distort` source too) runs where the "
        "layout is `verified` or `none` and is",
        f"  refused where it is `refused` ({refused} types): `LayoutNotMappedError` before any "
        "forward,",
        "  as where the processor's outputs hold no image pixel tensor or two "
        "(DeepSeek-VL-Hybrid's `high_res_pixel_values`:",
        "  distorting one alone would leave the image clean in the other); `token_regions` "
        "runs where the layout is `verified`",
        "  (`none`: `NoSpatialLayoutError`); region edits by token rank (`SwapImageTokens`, "
        "`AblateImageTokens`) need no layout",
        "  and run on every type with image tokens in the prompt (Mllama's cross-attention: "
        "`InterventionError` before any forward).",
        "- *parity*: `tested` — the tiny-model tests compare reads, `generate`, `score`, "
        "edits, decoding methods and",
        "  batch invariance with plain Hugging Face on this family; `forward tested (X "
        "processor)` — the default config,",
        "  shrunk (`interp/testing/zoo_parity.py`), built on CPU with the tiny processor X of "
        "its pattern (the Qwen-VL one for a",
        "  tower with a spatial merge; hand-built inputs:",
        "  no stock processor of these types builds offline; the llava one takes the type's own "
        "PIL image processor where",
        "  its feature site needs more than `pixel_values`, `interp/testing/builders/zoo_images.py`"
        "), passes eight checks against plain Hugging Face: residual reads",
        "  equal `output_hidden_states` (and a black image in place of each image changes "
        "them), the feature site gives",
        "  one vector per placeholder, greedy `generate` equals",
        "  `model.generate`, HF's own logits of a row alone equal the row's in the batch, "
        "`score` equals a teacher-forced",
        "  forward, a `Steer` edit equals a forward hook adding the vector, a `SwapImage` to a "
        "black image equals a forward",
        "  of the black-image encoding, and the batch's reads and contrastive decoding equal "
        "each row's alone;",
        "  `not tested: ...` — the structure is verified, the first of those steps that fails "
        "is named (run",
        "  `interp doctor --model <folder>` on a checkpoint); `text tested; not tested: ...` — "
        "the same, but the tiny model",
        "  builds and text-only rows (no image or audio) pass the reads and `score` checks "
        "against plain Hugging Face.",
        '- *reason*: why a type is refused; "the default config does not build" is '
        "transformers' own default (a",
        "  checkpoint's config may build: pass `adapter=` or register an entry after checking "
        "it with `interp doctor`).",
        "- *real tokenizer*: the checkpoints whose real tokenizer, published chat template and "
        "processor settings the",
        "  conformance suite builds this type around (`tests/families/test_real_*.py`, "
        "docs/conventions.md): `exact` — the",
        "  checkpoint's own vocabulary; `stand-in` — another vocabulary of the family (the "
        "checkpoint's was not found offline).",
        "",
        "| type | status | adapter | modalities | layout | parity | real tokenizer | reason |",
        "|---|---|---|---|---|---|---|---|",
    ]
    body = ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(head + body) + "\n"


def documented_rows() -> list[Row]:
    """The rows of ``docs/families.md`` read back: the last sweep's outcome without running it
    (``tests/families/test_zoo.py`` checks the file equals :func:`render` of the sweep, so tests
    that only need the list of supported types and their layouts read it here in milliseconds)."""
    rows = []
    for line in DOC.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = line[2:-2].split(" | ")
        name, status, *rest = cells
        adapter, modalities, layout, parity, real, reason = rest
        rows.append(
            Row(
                name.strip("`"),
                status == "supported",
                adapter,
                modalities,
                layout,
                parity,
                reason,
                real,
            )
        )
    return rows


def main() -> int:
    text = render(sweep())
    DOC.write_text(text)
    print(f"wrote {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "DOC",
    "TESTED",
    "Row",
    "classify",
    "documented_rows",
    "mapping_types",
    "render",
    "shrink",
    "sweep",
]
