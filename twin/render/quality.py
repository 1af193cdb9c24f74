"""Render quality that suits the machine: ``fast`` on a software GL renderer, ``full`` on a GPU.

``fast``: no shadows, no reflections, no multisampling, and an offscreen buffer the size
of the frame (a software rasteriser pays for every pixel of every pass, so each of these
multiplies the cost of a frame). ``full``: the model's own settings.
``auto`` (the default) picks ``fast`` when the GL renderer is a software one
(llvmpipe, softpipe, swrast, OSMesa) or cannot be named, ``full`` otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
from collections.abc import Iterator

import mujoco
from rob_twin.models.errors import RobTwinError

QUALITIES = ("fast", "full")
CHOICES = ("auto", *QUALITIES)
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "software", "mesa offscreen")
_GL_RENDERER = 0x1F01


class UnknownQualityError(RobTwinError, ValueError):
    """A render quality that is not one of ``CHOICES``."""


@functools.cache
def gl_renderer_name() -> str | None:
    """The GL_RENDERER string of an offscreen context (``"llvmpipe (LLVM 15...)"``), or
    None when no context can be made or the GL library cannot be found."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        ctx = mujoco.GLContext(16, 16)
        ctx.make_current()
    except Exception:  # no GL at all: the renderer will say why when it is asked for
        return None
    try:
        for name in (
            "libOpenGL.so.0",
            "libGL.so.1",
            ctypes.util.find_library("OSMesa") or "",
            ctypes.util.find_library("GL") or "",
        ):
            if not name:
                continue
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            lib.glGetString.restype = ctypes.c_char_p
            raw = lib.glGetString(_GL_RENDERER)
            if raw:
                return raw.decode("utf-8", "replace")
        return None
    finally:
        with contextlib.suppress(Exception):
            ctx.free()


def is_software_renderer(name: str | None) -> bool:
    """True when ``name`` (a GL_RENDERER string) is a software rasteriser, or unknown."""
    return name is None or any(s in name.lower() for s in SOFTWARE_RENDERERS)


def resolve_quality(requested: str | None = None) -> str:
    """``fast`` or ``full``: ``requested`` itself, or for ``auto``/None what suits the
    GL renderer (``fast`` on a software one)."""
    if requested is None or requested == "auto":
        return "fast" if is_software_renderer(gl_renderer_name()) else "full"
    if requested not in QUALITIES:
        raise UnknownQualityError(f"render quality {requested!r} is not one of {list(CHOICES)}")
    return requested


@contextlib.contextmanager
def offscreen_settings(
    model: mujoco.MjModel, quality: str, width: int, height: int
) -> Iterator[None]:
    """While a renderer is made from ``model``: for ``fast`` an offscreen buffer of
    ``width`` x ``height`` pixels without multisampling; the model's own values come back
    afterwards (they are visual settings only, physics never reads them)."""
    g, q = model.vis.global_, model.vis.quality
    saved = (g.offwidth, g.offheight, q.offsamples)
    if quality == "fast":
        g.offwidth, g.offheight, q.offsamples = width, height, 0
    try:
        yield
    finally:
        g.offwidth, g.offheight, q.offsamples = saved


def apply_scene_flags(scene: mujoco.MjvScene, quality: str) -> None:
    """Shadows and reflections off for ``fast``, on for ``full``."""
    on = quality == "full"
    scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = on
    scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = on


def apply_model_quality(model: mujoco.MjModel, quality: str) -> None:
    """For a window whose scene flags cannot be reached (MuJoCo's passive viewer): with
    ``fast`` no light casts shadows and no material reflects. Visual fields only: physics
    never reads them."""
    if quality == "fast":
        model.light_castshadow[:] = 0
        model.mat_reflectance[:] = 0.0
