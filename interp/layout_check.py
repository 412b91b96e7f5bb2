"""Token layouts checked on the loaded model: the perturbation test, generic over families.

A token layout (:mod:`interp.region_layouts`) says where each image token of a prompt comes from
in the original image; pixel-space conditions (``distort`` ...), token regions, attribution maps
and region edits rely on it. A written entry's layout is checked by a test with the family's own
merge code (``tests/families/test_regions.py``). Every other loaded model that takes images (an
entry inferred from the config, a written entry without a checked layout) gets its layout
checked here, on the model and processor in hand, when it is loaded with its weights:

1. **Local tokens.** The vision tower's blocks (each ``ModuleList`` outside the text decoder whose
   blocks attend or mix — a mixer, a short convolution over the patch grid — and return a tensor
   of their input's shape) are bypassed: their output
   is replaced by their input. What is left from the pixels to the image tokens is the patch
   embedding and the model's own merge (norms, projector, pixel shuffle, pooling, patch merger,
   and a connector's resampler: the blocks inside a feature site after the tower are kept), so
   each token depends only on the pixels its patches read, unless the merge itself mixes them.
2. **The map.** A noise image, and copies with one region redrawn (the left and right halves, the
   top and bottom halves, a random box), go through the stock processor and the model up to the
   text decoder's first layer. A candidate layout passes when, for every region, each image token
   that changed has a box overlapping the region grown by a margin ``m``, every token whose box
   overlaps the region shrunk by ``m`` changed, and at least one token lay well inside a region.
   ``m = max(s / 2, 3)`` original pixels, ``s`` the median token side (a resize filter spreads a
   pixel change over its support: bicubic reaches 2 source pixels, or 2 ratios when it shrinks).
   **The reach.** A merge of overlapping convolutions makes each token read past its own cell
   (GOT-OCR 2.0's SAM neck, a 3 × 3 convolution, then two 3 × 3 stride-2 convolutions: a token
   of 4 × 4 patches reads 4 patches before its cell and 1 after, per side). The reach is not
   declared per type: :mod:`interp.reach` records the ``Conv2d`` and ``F.interpolate`` steps
   outside the bypassed blocks on the reference forward and composes their kernels, strides,
   paddings and resample supports into ``(before, after)`` per axis, in token cells. A changed
   token then passes when its box grown by the reach (each side by ``reach · its width`` or
   height) overlaps the region grown by ``m``; the tokens that must change are still those whose
   own box overlaps the region shrunk by ``m``. The reach is zero for a tower whose only
   convolution is its patch embedding (kernel = stride, no padding), the check unchanged there;
   it is directional, so a grid shifted by a token either way, transposed, or with the wrong
   count per side still fails (``tests/core/test_reach.py``).
3. **The pixel rows.** In a batch of two images, redrawing the pixels the entry's
   ``pixel_layout`` assigns to the second row changes that row's image tokens and not the first
   row's (what ``distort`` edits); where it does not, the other pixel layouts are tried and the
   first that passes replaces it (a processor that flattens patches: ``"patches"``).

Candidates, in order: the entry's own ``token_layout``, then the layouts of
:mod:`interp.region_layouts` (LLaVA's single grid, Qwen-VL's, one grid on the canvas the processor
makes, Gemma 3's, Gemma 4's, any-resolution tiles, InternVL's, Idefics3's, then a grid merged by
strided convolutions, HunYuan-VL's framed grid, Inkling 2's padded blocks, MiniCPM-V's, Fuyu's);
one that raises or gives another token count than the prompt's is skipped. The first that passes is
the model's layout (``vlm.adapter.token_layout``, ``layout_verified``). When none passes and every
one of at least :data:`MIN_PLACELESS` image tokens changes whichever corner (a sixteenth of the
image) is redrawn (a resampler, a projector with learned queries), the tokens have no place in the image: the entry
gets ``no_layout`` (token regions raise :class:`~interp.errors.NoSpatialLayoutError`) and, its
pixel rows passing, pixel-space conditions run. Otherwise the layout-dependent features stay
refused and the :class:`~interp.errors.LayoutNotMappedError` says why.

What it does not see: an error smaller than the margin (a layout off by a pixel or two, or by
half a token on a grid as coarse as the probe's 4 × 4), and whatever the bypassed blocks would add
(they mix tokens globally; the layout is where each token's own patch came from, as for the
written entries). A processor with no one image pixel tensor to edit (DeepSeek-VL hybrid's
``pixel_values`` and ``high_res_pixel_values``) gets its token layout; its pixel rows are not
checked and pixel-space conditions stay refused (``pixel_key`` raises at encode).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from PIL import Image

from . import region_layouts as rl
from .reach import Reach, Recorder

if TYPE_CHECKING:  # interp.model imports this module; the encoding is imported when a check runs
    from .encoding.codec import ModelLike as VLM

# the probe image (width, height): wider than tall, so a transposed map fails
PROBE = (96, 64)
# "no place" needs this many image tokens: on a coarser grid a redrawn corner reaches every
# token through the resize filter alone
MIN_PLACELESS = 16
CANDIDATES: tuple[rl.LayoutFn, ...] = (
    rl.llava_layout,
    rl.qwen_layout,
    rl.grid_layout,
    rl.gemma3_layout,
    rl.gemma4_layout,
    rl.anyres_layout,
    rl.internvl_layout,
    rl.idefics3_layout,
    rl.conv_downsampled_layout,
    rl.hunyuan_vl_layout,
    rl.padded_blocks_layout,
    rl.minicpmv_layout,
    rl.fuyu_layout,
)
Box = tuple[int, int, int, int]
NO_REACH = Reach()


@dataclass(frozen=True)
class LayoutCheck:
    """The verdict of :func:`check_layout`: ``layout`` is the accepted layout function's name
    ("" when none passed), ``reason`` why none did, ``tried`` each candidate tried with why it
    failed, ``tokens`` the image tokens of the probe image and ``inside`` how many lay well
    inside a redrawn region (each was seen to change)."""

    layout: str = ""
    reason: str = ""
    tried: tuple[tuple[str, str], ...] = ()
    tokens: int = 0
    inside: int = 0
    placeless: bool = False
    fn: rl.LayoutFn | None = field(default=None, repr=False, compare=False)
    pixel_layout: str = ""
    reach: Reach = NO_REACH
    unedited: str = ""  # why pixel-space conditions stay refused (no one pixel tensor to edit)

    @property
    def ok(self) -> bool:
        """A layout passed, or the tokens were shown to have no place (and the pixel rows
        passed)."""
        return bool(self.layout) or self.placeless

    def __str__(self) -> str:
        pixels = f"; pixel-space conditions stay refused: {self.unedited}" if self.unedited else ""
        if self.placeless:
            return (
                f"every one of the {self.tokens} image tokens changed whichever corner of the "
                "image was redrawn (a resampler or a projector that mixes them): they have no "
                f"place in the image (checked on the loaded model){pixels}"
            )
        if self.ok:
            reach = f"; {self.reach}" if self.reach else ""
            return (
                f"{self.layout} checked on the loaded model ({self.tokens} image tokens, "
                f"{self.inside} inside redrawn regions changed, the rest as mapped{reach}){pixels}"
            )
        return f"no layout passed the check on the loaded model: {self.reason}"


class _Stop(Exception):
    """Raised at the text decoder's first layer once its input is read."""


class _Unbypassable(Exception):
    """A vision block whose output is not a tensor of its input's shape."""


def _noise(w: int, h: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _regions(size: tuple[int, int]) -> list[Box]:
    w, h = size
    rng = np.random.default_rng(7)
    x0, y0 = int(rng.integers(0, w // 3)), int(rng.integers(0, h // 3))
    box = (x0, y0, x0 + w // 2, y0 + h // 2)
    return [(0, 0, w // 2, h), (w // 2, 0, w, h), (0, 0, w, h // 2), (0, h // 2, w, h), box]


def _overlap(boxes: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    x0, y0, x1, y1 = box
    if x1 <= x0 or y1 <= y0:
        return np.zeros(len(boxes), dtype=bool)
    with np.errstate(invalid="ignore"):  # NaN boxes (cls, newline) overlap nothing
        return (boxes[:, 0] < x1) & (boxes[:, 2] > x0) & (boxes[:, 1] < y1) & (boxes[:, 3] > y0)


def vision_blocks(vlm: VLM) -> list[torch.nn.Module]:
    """The blocks of every ``ModuleList`` of the model outside the text decoder and the audio
    tower whose blocks hold an attention, a mixer or a short convolution over the patch grid (the
    vision tower's layers, a resampler's)."""
    decoder = vlm.adapter.decoder(vlm.hf)
    inside = {id(m) for m in decoder.modules()}
    site = vlm.adapter.image_features
    lists = [
        (name, module)
        for name, module in vlm.hf.named_modules()
        if isinstance(module, torch.nn.ModuleList)
        and id(module) not in inside
        and "audio" not in name
    ]
    # a feature site after the tower (a connector's resampler) is the merge: kept, unless the
    # site is the tower itself (Qwen-VL's ``visual``: its blocks and its merger)
    if any(not n.startswith(f"{site}.") for n, _ in lists):
        lists = [(n, m) for n, m in lists if not n.startswith(f"{site}.")]
    out: list[torch.nn.Module] = []
    for _, module in lists:
        if any(id(b) in {id(o) for o in out} for b in module):
            continue
        mixing = [
            b
            for b in module
            if any(
                key in sub.lower()
                for sub, _ in b.named_modules()
                for key in ("attn", "attention", "mixer")
            )
            # a gated convolution over the patch grid mixes too (LFM3-VL's conv layers)
            or any("shortconv" in type(m).__name__.lower() for m in b.modules())
        ]
        if mixing and len(mixing) == len(module):
            out.extend(module)
    return out


def _identity(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
    x = args[0] if args else kwargs.get("hidden_states", kwargs.get("hidden_state"))
    first = out if isinstance(out, torch.Tensor) else out[0]
    if not isinstance(x, torch.Tensor) or not isinstance(first, torch.Tensor):
        raise _Unbypassable("a vision block whose input or output is not a tensor")
    if first.shape != x.shape:
        raise _Unbypassable(
            f"a vision block changes its input's shape ({tuple(x.shape)} -> {tuple(first.shape)})"
        )
    if isinstance(out, torch.Tensor):
        return x
    if isinstance(out, tuple):
        return (x, *out[1:])
    out[next(iter(out.keys()))] = x  # a ModelOutput
    return out


@contextmanager
def bypassed(blocks: list[torch.nn.Module]) -> Iterator[None]:
    """Within the block, each of ``blocks`` returns its input (see the module docstring). The
    block's ``forward`` is wrapped rather than hooked: a model that records its blocks' outputs
    with hooks of its own (the hidden states a projector reads from several layers) then records
    the bypassed ones."""
    own = [block.__dict__.get("forward") for block in blocks]  # accelerate wraps some
    for block in blocks:

        def forward(*args: Any, _orig: Any = block.forward, **kwargs: Any) -> Any:
            return _identity(None, args, kwargs, _orig(*args, **kwargs))

        block.forward = forward
    try:
        yield
    finally:
        for block, before in zip(blocks, own):
            if before is None:
                del block.forward  # back to the class's method
            else:
                block.forward = before


def _embedded(vlm: VLM, inputs: dict[str, Any]) -> torch.Tensor:
    """``[rows, seq, d]``: the text decoder's first-layer input (the forward stops there)."""
    seen: list[torch.Tensor] = []

    def read(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        x = args[0] if args else kwargs["hidden_states"]
        seen.append(x.detach().float().cpu())
        raise _Stop

    layer = vlm.adapter.layers(vlm.hf)[0]
    hook = layer.register_forward_pre_hook(read, with_kwargs=True)
    if vlm.adapter.forward_inputs is not None:
        inputs = vlm.adapter.forward_inputs(dict(inputs))
    try:
        with torch.no_grad():
            vlm.hf(**inputs)
    except _Stop:
        pass
    finally:
        hook.remove()
    if not seen:
        raise _Unbypassable("the forward did not reach the text decoder's first layer")
    return seen[0]


def _image_tokens(vlm: VLM, images: list[np.ndarray]) -> tuple[torch.Tensor, Any]:
    """The image tokens (``[n, d]`` over every row, in prompt order) and the encoding."""
    from .encoding import encode
    from .samples import Sample

    rows = [
        Sample(question="what is it?", image=Image.fromarray(im), id=str(k))
        for k, im in enumerate(images)
    ]
    enc = encode(vlm, rows)
    states = _embedded(vlm, enc.inputs)
    return states[enc.image_mask.cpu()], enc


def _changed(out: torch.Tensor, ref: torch.Tensor) -> np.ndarray:
    scale = float(ref.abs().amax()) or 1.0
    return (out - ref).abs().amax(-1).gt(1e-4 * scale).numpy()


def _redrawn(
    vlm: VLM, base: np.ndarray, regions: list[Box] | None = None
) -> Iterator[tuple[Box, torch.Tensor]]:
    """Each region (default: :func:`_regions`) and the image tokens of ``base`` with it
    redrawn."""
    for k, (x0, y0, x1, y1) in enumerate(regions or _regions(PROBE)):
        redrawn = base.copy()
        redrawn[y0:y1, x0:x1] = _noise(x1 - x0, y1 - y0, 100 + k)
        yield (x0, y0, x1, y1), _image_tokens(vlm, [redrawn])[0]


def _try(
    vlm: VLM,
    fn: rl.LayoutFn,
    redrawn: Callable[[], list[tuple[Box, torch.Tensor]]],
    ref: torch.Tensor,
    reach: Reach = NO_REACH,
) -> tuple[str, int]:
    """Why ``fn`` fails the perturbation test ("" when it passes), and the tokens checked;
    ``redrawn()`` gives the redrawn regions' image tokens (computed once for every candidate).
    A changed token passes when the pixels it reads (its box grown by ``reach``) overlap the
    region grown by ``m``; the tokens that must change are those whose own box overlaps the
    region shrunk by ``m``."""
    try:
        layout = fn(vlm.processor, vlm.hf.config, PROBE)
    except Exception as err:  # noqa: BLE001 - a layout that does not apply is skipped
        return f"does not apply ({type(err).__name__}: {str(err)[:80]})", 0
    if len(layout) != len(ref):
        return f"maps {len(layout)} tokens, the prompt has {len(ref)}", 0
    boxes = layout.boxes
    sides = np.minimum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1])
    sides = sides[np.isfinite(sides)]
    if not len(sides):
        return "maps no token to a place in the image", 0
    m = max(float(np.median(sides)) / 2, 3.0)
    reads = reach.boxes(boxes)
    inside = 0
    for (x0, y0, x1, y1), out in redrawn():
        if out.shape != ref.shape:
            return "the image-token count changes with the pixels", 0
        changed = _changed(out, ref)
        grown = _overlap(reads, (x0 - m, y0 - m, x1 + m, y1 + m))
        shrunk = _overlap(boxes, (x0 + m, y0 + m, x1 - m, y1 - m))
        if not changed.any():
            return f"redrawing region {(x0, y0, x1, y1)} changes no image token", 0
        if (changed & ~grown).any():
            far = np.flatnonzero(changed & ~grown)
            why = f"region {(x0, y0, x1, y1)} changes tokens {far[:6].tolist()} mapped elsewhere"
            # all of them in the ring one token wide around the region: the map is right but
            # each token reads past its own cell (overlapping convolutions after the patches)
            tw, th = (
                np.nanmedian(boxes[:, 2] - boxes[:, 0]),
                np.nanmedian(boxes[:, 3] - boxes[:, 1]),
            )
            ring = _overlap(reads, (x0 - m - tw, y0 - m - th, x1 + m + tw, y1 + m + th))
            if not reach and ring[far].all():  # (with a reach, that is allowed for)
                why += " (each within a token of it: the tokens read past their own cells)"
            return why, 0
        if (shrunk & ~changed).any():
            kept = np.flatnonzero(shrunk & ~changed)
            return f"region {(x0, y0, x1, y1)} leaves tokens {kept[:6].tolist()} mapped inside", 0
        inside += int(shrunk.sum())
    if not inside:
        return "no token lay well inside a redrawn region (the check would check nothing)", 0
    return "", inside


def _pixel_rows_fail(vlm: VLM, layout: str, ref: torch.Tensor, enc: Any) -> str:
    """Why redrawing the second row's pixels of the two-row encoding ``enc`` (image tokens
    ``ref``), as pixel layout ``layout`` finds them, does not change exactly that row's image
    tokens ("" when it does)."""
    adapter = replace(vlm.adapter, layout_verified=True, pixel_layout=layout)
    key = adapter.pixel_key(enc.inputs)
    try:
        where = adapter.pixel_rows(enc.inputs, [1, 1], enc.image_mask, vlm.processor)
    except Exception as err:  # noqa: BLE001 - a pixel layout that does not apply is skipped
        return f"pixel_layout {layout!r} does not apply ({type(err).__name__})"
    if where[1] is None:
        return f"pixel_layout {layout!r} finds no pixels for the second row"
    pixels = enc.inputs[key].clone()
    gen = torch.Generator().manual_seed(3)
    pixels[where[1]] = torch.randn(pixels[where[1]].shape, generator=gen).to(pixels)
    states = _embedded(vlm, {**enc.inputs, key: pixels})[enc.image_mask.cpu()]
    changed = _changed(states, ref)
    first = int(enc.image_mask[0].sum())
    if changed[:first].any():
        return f"pixel_layout {layout!r}: editing row 2's pixels changes row 1"
    if not changed[first:].any():
        return f"pixel_layout {layout!r}: editing row 2's pixels changes nothing"
    return ""


def _pixel_layout(vlm: VLM, base: np.ndarray) -> tuple[str, str, str]:
    """The first pixel layout (the entry's own, then the others of
    :data:`~interp.adapters.pixels.PIXEL_ROWS`) whose rows pass, why the entry's own failed
    (both "" for a family whose rows run alone: nothing to tell apart), and why pixel-space
    conditions stay refused whatever the rows: no one image pixel tensor to edit (then the
    entry's own layout is kept, unchecked: ``pixel_key`` refuses those conditions at encode)."""
    from .adapters.pixels import PIXEL_ROWS
    from .errors import LayoutNotMappedError

    own = vlm.adapter.pixel_layout
    if vlm.adapter.batch_dependent:
        return own, "", ""
    ref, enc = _image_tokens(vlm, [base, _noise(*PROBE, seed=2)])  # one encoding for all
    try:
        replace(vlm.adapter, layout_verified=True).pixel_key(enc.inputs)
    except LayoutNotMappedError as err:  # several pixel tensors (DeepSeek-VL hybrid's), or none
        return own, "", str(err).split(", but ", 1)[-1].split("; register", 1)[0]
    first = ""
    for layout in [own, *(k for k in PIXEL_ROWS if k != own)]:
        why = _pixel_rows_fail(vlm, layout, ref, enc)
        if not why:
            return layout, first, ""
        first = first or why
    return "", first, ""


def check_layout(vlm: VLM) -> LayoutCheck:
    """Check candidate token layouts on ``vlm`` (weights loaded) by the perturbation test of the
    module docstring; the first that passes is the verdict's ``layout``."""
    blocks = vision_blocks(vlm)
    base = _noise(*PROBE, seed=1)
    own = vlm.adapter.token_layout
    candidates = ([own] if own is not None else []) + [c for c in CANDIDATES if c is not own]
    tried: list[tuple[str, str]] = []
    # the merge's convolutions, recorded on the reference forward (the decoder's are not read)
    recorder = Recorder(vlm.hf, [*blocks, vlm.adapter.decoder(vlm.hf)])
    try:
        with bypassed(blocks):
            with recorder.recording():
                ref, _ = _image_tokens(vlm, [base])
            reach = NO_REACH if recorder.unknown else recorder.reach(len(ref))
            cache: list[tuple[Box, torch.Tensor]] = []

            def redrawn() -> list[tuple[Box, torch.Tensor]]:
                if not cache:  # the candidates that get this far share the forwards
                    cache.extend(_redrawn(vlm, base))
                return cache

            for fn in candidates:
                why, inside = _try(vlm, fn, redrawn, ref, reach)
                tried.append((fn.__name__, why))
                if not why:
                    rows, pixel, unedited = _pixel_layout(vlm, base)
                    if not rows:
                        return LayoutCheck("", pixel, tuple(tried), len(ref))
                    return LayoutCheck(
                        fn.__name__,
                        "",
                        tuple(tried),
                        len(ref),
                        inside,
                        fn=fn,
                        pixel_layout=rows,
                        reach=reach,
                        unedited=unedited,
                    )
            if len(ref) >= MIN_PLACELESS and _mixes_all(vlm, base, ref):
                rows, pixel, unedited = _pixel_layout(vlm, base)
                if not rows:
                    return LayoutCheck("", pixel, tuple(tried), len(ref))
                return LayoutCheck(
                    "",
                    "",
                    tuple(tried),
                    len(ref),
                    pixel_layout=rows,
                    placeless=True,
                    unedited=unedited,
                )
    except _Unbypassable as err:
        return LayoutCheck("", str(err), tuple(tried))
    best = next((why for _, why in tried if not why.startswith(("does not", "maps"))), "")
    counts = [f"{name} {why.split()[1]}" for name, why in tried if why.startswith("maps ")]
    reason = best or (
        f"no candidate layout gives the prompt's image-token count ({len(ref)}; "
        + (f"{', '.join(counts)}; the others do not apply)" if counts else "none applies)")
    )
    return LayoutCheck("", reason, tuple(tried), len(ref))


def _mixes_all(vlm: VLM, base: np.ndarray, ref: torch.Tensor) -> bool:
    """Whether redrawing any one corner (a sixteenth of the image) changes every image token:
    under a local map only the few tokens near that corner would."""
    w, h = PROBE
    corners = [(0, 0), (3 * w // 4, 0), (0, 3 * h // 4), (3 * w // 4, 3 * h // 4)]
    boxes = [(x, y, x + w // 4, y + h // 4) for x, y in corners]
    return all(
        out.shape == ref.shape and _changed(out, ref).all() for _, out in _redrawn(vlm, base, boxes)
    )


def needs_check(vlm: VLM) -> str:
    """Why ``vlm``'s layout is not checked at load ("" when it is to be checked)."""
    adapter = vlm.adapter
    if "image" not in adapter.modalities or adapter.no_layout or adapter.layout_verified:
        return "nothing to check"
    if adapter.fusion != "tokens":
        return "the image enters by cross-attention"
    if getattr(vlm, "remote", False) or not getattr(vlm, "dispatched", False):
        return "the layout is checked on the weights, which are not loaded here"
    if vlm.processor is None or not hasattr(vlm.processor, "image_processor"):
        return "no image processor to check the layout with"
    return ""


def check_at_load(vlm: VLM) -> LayoutCheck | None:
    """Run :func:`check_layout` where :func:`needs_check` says so and record the verdict on the
    adapter: a passing layout becomes ``token_layout`` with ``layout_verified``; otherwise the
    reason goes into ``layout_refusal`` (shown by the refusals). A check that cannot run (an
    error of the model or processor on the probe image) is recorded the same way; loading never
    fails because of it."""
    skip = needs_check(vlm)
    if skip:
        if skip != "nothing to check" and not vlm.adapter.layout_refusal:
            vlm.adapter = replace(vlm.adapter, layout_refusal=f"not checked: {skip}")
        return None
    try:
        verdict = check_layout(vlm)
    except Exception as err:  # noqa: BLE001 - an optional check must not break a load
        verdict = LayoutCheck("", f"the check could not run ({type(err).__name__}: {err})"[:200])
    if verdict.placeless:
        vlm.adapter = replace(
            vlm.adapter,
            token_layout=None,
            pixel_layout=verdict.pixel_layout,
            no_layout=str(verdict),
            layout_verified=True,
            layout_checked=str(verdict),
            layout_refusal="",
        )
    elif verdict.ok:
        vlm.adapter = replace(
            vlm.adapter,
            token_layout=verdict.fn,
            pixel_layout=verdict.pixel_layout,
            layout_verified=True,
            layout_checked=str(verdict),
            layout_refusal="",
        )
    else:
        vlm.adapter = replace(vlm.adapter, layout_refusal=str(verdict))
    return verdict


__all__ = ["LayoutCheck", "bypassed", "check_at_load", "check_layout", "vision_blocks"]
