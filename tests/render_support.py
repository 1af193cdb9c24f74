"""Test helper: what a video recorder's camera sees, object by object."""

from __future__ import annotations

import mujoco
import numpy as np


def segmentation(rec, data, height: int, width: int) -> np.ndarray:
    """The (object id, object type) of every pixel of ``rec``'s free camera on its render
    model (``twin.render.video`` recorder), ``height`` x ``width``."""
    seg = mujoco.Renderer(rec.render_model, height, width)
    try:
        seg.enable_segmentation_rendering()
        seg.update_scene(data, camera=rec.free_camera, scene_option=rec.options)
        return seg.render()
    finally:
        seg.close()
