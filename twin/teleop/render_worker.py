"""The live video's render process: ``python -m rob_twin.twin.teleop.render_worker FD``.

Started by ``rob_twin.twin.teleop.video.LiveVideo`` with one end of a socket pair as file
descriptor ``FD`` (a ``multiprocessing.connection.Connection``): it first receives the
model and the ``VideoConfig``, then runs ``render_process_main``: its own MjData, GL
context and renderer; per request it renders each camera asked for, draws the overlays
(the operator's TCP target as a translucent ghost, the clearance-limiting pair in amber)
and encodes JPEG. Its own interpreter, so
that the caller's ``__main__`` is never re-run (as ``multiprocessing``'s spawn would) and
rendering never shares the closed loop's interpreter lock. A closed pipe (the parent
ended) ends it.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from multiprocessing.connection import Connection

import numpy as np
from rob_twin.twin.teleop.video import VideoConfig

GHOST_RGBA = (0.1, 0.9, 0.4, 0.45)  # the operator's target: translucent green
GHOST_RADIUS_M = 0.03
HIGHLIGHT_RGBA = (1.0, 0.6, 0.0, 1.0)  # the clearance-limiting pair: amber


def main(argv: list[str]) -> int:
    import signal

    # Ctrl-C in a terminal reaches the whole process group: the parent ends this process
    # through the pipe, after its own clean shutdown
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    conn = Connection(int(argv[0]))
    try:
        model, config = conn.recv()
    except EOFError:
        return 0
    render_process_main(conn, model, config)
    return 0


def render_process_main(conn, model, config: VideoConfig) -> None:
    """The render process: answers each (snapshot, cameras, overlay) with a list of
    (camera, JPEG bytes or None when oversize, render + encode time [ms]); ``None`` or a
    closed pipe ends it."""
    import mujoco
    from rob_twin.twin.render.video import close_renderer, make_renderer

    # llvmpipe reads LP_NUM_THREADS when its context is made: one rasteriser thread, so the
    # loop keeps a core (an explicit setting in the environment wins)
    os.environ.setdefault("LP_NUM_THREADS", str(config.software_gl_threads))
    if config.nice and hasattr(os, "nice"):  # before the GL context: its workers inherit it
        with contextlib.suppress(OSError):
            os.nice(config.nice)
    try:
        renderer = make_renderer(model, config.width, config.height, config.quality)
    except Exception as err:  # no GL: the parent's status says why
        conn.send(("error", f"{type(err).__name__}: {err}"))
        return
    conn.send(("ready", None))
    data = mujoco.MjData(model)
    options = mujoco.MjvOption()
    options.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False  # rays would hide the arms
    base = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "base"))
    try:
        while True:
            try:
                request = conn.recv()
            except EOFError:
                return
            if request is None:
                return
            snap, cameras, overlay = request
            data.qpos[:] = snap.qpos
            data.mocap_pos[:] = snap.mocap_pos
            data.mocap_quat[:] = snap.mocap_quat
            mujoco.mj_kinematics(model, data)
            mujoco.mj_camlight(model, data)
            out = [
                _render_one(renderer, data, options, name, overlay, base, config)
                for name in cameras
            ]
            conn.send(out)
    finally:
        close_renderer(renderer)


def _render_one(renderer, data, options, camera, overlay, base, config):
    from PIL import Image

    t0 = time.perf_counter()
    renderer.update_scene(data, camera=camera, scene_option=options)
    scene = renderer.scene
    if overlay.highlight:
        from rob_twin.twin.render.highlight import paint

        paint(scene, set(overlay.highlight), HIGHLIGHT_RGBA)
    for target in overlay.targets:
        _add_ghost(scene, data, base, target)
    pixels = renderer.render()
    quality = config.jpeg_quality
    while True:
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="JPEG", quality=quality)
        jpeg = buf.getvalue()
        if len(jpeg) <= config.max_frame_bytes or quality <= 20:
            break
        quality = max(20, quality - 20)
    ms = (time.perf_counter() - t0) * 1e3
    return camera, (jpeg if len(jpeg) <= config.max_frame_bytes else None), ms


def _add_ghost(scene, data, base: int, target: np.ndarray) -> None:
    """A translucent sphere and the target's axes at ``target`` (4x4 in the base frame),
    placed in the world through the base body's pose in ``data``."""
    import mujoco

    if scene.ngeom + 1 > scene.maxgeom:
        return
    rot_b = data.xmat[base].reshape(3, 3) if base >= 0 else np.eye(3)
    pos_b = data.xpos[base] if base >= 0 else np.zeros(3)
    pos = pos_b + rot_b @ target[:3, 3]
    mat = rot_b @ target[:3, :3]
    g = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(
        g,
        int(mujoco.mjtGeom.mjGEOM_SPHERE),
        np.full(3, GHOST_RADIUS_M),
        pos,
        mat.reshape(9),
        np.array(GHOST_RGBA, dtype=np.float32),
    )
    g.category = int(mujoco.mjtCatBit.mjCAT_DECOR)
    scene.ngeom += 1
    for axis, rgba in ((0, (1, 0.2, 0.2, 0.8)), (1, (0.2, 1, 0.2, 0.8)), (2, (0.2, 0.4, 1, 0.8))):
        if scene.ngeom + 1 > scene.maxgeom:
            return
        a = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(
            a,
            int(mujoco.mjtGeom.mjGEOM_NONE),
            np.zeros(3),
            np.zeros(3),
            np.eye(3).reshape(9),
            np.array(rgba, dtype=np.float32),
        )
        mujoco.mjv_connector(
            a, int(mujoco.mjtGeom.mjGEOM_CAPSULE), 0.004, pos, pos + 0.06 * mat[:, axis]
        )
        scene.ngeom += 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
