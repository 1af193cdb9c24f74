"""Captions burned into video frames (PIL): lines of text on a dark band at the bottom.

A line starting with ``"!"`` is drawn in red without the mark (a warning: contact)."""

from __future__ import annotations

import functools

import numpy as np
from PIL import Image, ImageDraw, ImageFont

MARGIN_PX = 6


@functools.cache
def _font(size_px: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size_px)
    except (OSError, TypeError, ImportError):  # Pillow without FreeType: the bitmap font
        return ImageFont.load_default()


def caption_size_px(height_px: int) -> int:
    """Text height [px] for a frame ``height_px`` high (about 1/26 of it, 11..28)."""
    return int(min(28, max(11, height_px // 26)))


def burn_captions(frame: np.ndarray, lines: list[str]) -> np.ndarray:
    """A copy of ``frame`` (H x W x 3, uint8) with ``lines`` written on a dark band. Only the
    band is drawn (PIL), the rest is copied: a 1280x720 frame costs a third as much."""
    height, width = frame.shape[:2]
    size = caption_size_px(height)
    font = _font(size)
    step = size + 4
    band_h = MARGIN_PX * 2 + step * len(lines)
    top = max(0, height - band_h)
    base = Image.fromarray(np.ascontiguousarray(frame[top:])).convert("RGBA")
    base.alpha_composite(Image.new("RGBA", base.size, (0, 0, 0, 160)))
    draw = ImageDraw.Draw(base)
    for i, line in enumerate(lines):
        warn = line.startswith("!")
        draw.text(
            (MARGIN_PX, MARGIN_PX + i * step),
            line[1:] if warn else line,
            fill=(255, 90, 80) if warn else (255, 255, 255),
            font=font,
        )
    out = np.array(frame, copy=True)
    out[top:] = np.asarray(base.convert("RGB"))
    return out
