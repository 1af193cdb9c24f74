"""Render quality (fast / full / auto), captions burned into frames, the scenario field."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.render.captions import burn_captions
from rob_twin.twin.render.quality import (
    CHOICES,
    UnknownQualityError,
    is_software_renderer,
    offscreen_settings,
    resolve_quality,
)
from rob_twin.twin.scenario.run import Scenario
from rob_twin.twin.scenario.schema import ScenarioError


def test_software_renderers_are_recognised():
    assert is_software_renderer("llvmpipe (LLVM 15.0.6, 256 bits)")
    assert is_software_renderer(None)  # unknown: the cheap setting
    assert not is_software_renderer("NVIDIA H200/PCIe/SSE2")


def test_explicit_quality_wins_and_unknown_is_refused():
    assert resolve_quality("full") == "full" and resolve_quality("fast") == "fast"
    assert resolve_quality("auto") in ("fast", "full")
    with pytest.raises(UnknownQualityError, match="'ultra'.*auto") as err:
        resolve_quality("ultra")
    assert isinstance(err.value, RobTwinError)


def test_cli_choices_match_the_module():
    from rob_twin.cli.main import QUALITY_CHOICES

    assert QUALITY_CHOICES == CHOICES


def test_fast_shrinks_the_offscreen_buffer_only_while_rendering():
    from rob_twin.models.loading import load_scene

    m = load_scene()
    before = (m.vis.global_.offwidth, m.vis.global_.offheight, m.vis.quality.offsamples)
    with offscreen_settings(m, "fast", 320, 240):
        assert (m.vis.global_.offwidth, m.vis.global_.offheight, m.vis.quality.offsamples) == (
            320,
            240,
            0,
        )
    assert (m.vis.global_.offwidth, m.vis.global_.offheight, m.vis.quality.offsamples) == before
    with offscreen_settings(m, "full", 320, 240):
        assert m.vis.quality.offsamples == before[2]


def test_captions_darken_a_band_at_the_bottom_and_warnings_are_red():
    frame = np.full((120, 160, 3), 200, np.uint8)
    out = burn_captions(frame, ["plain", "!contact"])
    assert out.shape == frame.shape and out.dtype == np.uint8
    assert np.array_equal(out[:40], frame[:40])  # the top is untouched
    band = out[-30:]
    assert band.mean() < 150  # darkened
    red = (band[..., 0] > 200) & (band[..., 1] < 150)
    assert red.any()  # the warning line
    assert np.array_equal(frame, np.full((120, 160, 3), 200, np.uint8))  # input unchanged


def test_scenario_quality_field_is_validated():
    base = {"name": "q", "duration": 0.1}
    assert Scenario.from_dict(base).quality == "auto"
    assert Scenario.from_dict({**base, "quality": "fast"}).quality == "fast"
    with pytest.raises(ScenarioError, match="quality"):
        Scenario.from_dict({**base, "quality": "ultra"})


def test_fast_frames_render_without_shadows():
    import mujoco
    from rob_twin.models.loading import load_scene
    from rob_twin.twin.render.video import RenderUnavailable, make_renderer

    m = load_scene()
    try:
        r = make_renderer(m, 160, 120, "fast")
    except RenderUnavailable as err:
        pytest.skip(f"no GL: {err}")
    try:
        assert not r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW]
        assert not r.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION]
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        r.update_scene(d, camera="front")
        assert r.render().std() > 5  # a picture, not a blank buffer
    finally:
        r.close()


class _Status:
    """A planner stand-in reporting one fixed status (the captions only read it)."""

    def __init__(self, status: dict):
        self._status = status

    def status(self, now: float) -> dict:
        return self._status


def test_group_captions_follow_the_plan():
    from rob_twin.twin.scenario.crossing_demo import Contrast, group_captions

    contrast = Contrast(states=np.zeros((10, 3)), rate_hz=125.0, contact={2: -0.01, 3: -0.02})
    waiting = group_captions(0.1, _Status({"state": "waiting", "last": None}), contrast)
    assert "planning" in waiting[1]
    running = group_captions(
        1.0, _Status({"state": "executing", "progress": 0.5, "clearance_m": 0.007, "last": None})
    )
    assert "50 %" in running[1] and "7.0 mm" in running[2]
    done = group_captions(
        4.0,
        _Status(
            {
                "state": "idle",
                "last": {
                    "outcome": "completed",
                    "plan_min_clearance_m": 0.007,
                    "start_skew_s": 0.0002,
                    "max_deviation_rad": 0.0005,
                },
            }
        ),
        contrast,
    )
    assert "0.20 ms" in done[2] and done[3] == "(planned alone: 2 of 10 samples in contact)"
    failed = group_captions(
        4.0, _Status({"state": "idle", "last": {"status": "no_path", "reason": "boxed in"}})
    )
    assert failed[1].startswith("!") and "boxed in" in failed[1]


def test_the_contrast_replay_marks_contact_frames_in_red():
    from rob_twin.models.loading import CROSSING_START_KEY, keyframe_state
    from rob_twin.twin.render.video import RenderUnavailable, VideoRecorder
    from rob_twin.twin.scenario.crossing_demo import TITLE_FRAMES, Contrast, film_contrast

    model, qpos = keyframe_state(CROSSING_START_KEY)
    try:
        rec = VideoRecorder(model, "front", fps=25, width=160, height=120, quality="fast")
    except RenderUnavailable as err:
        pytest.skip(f"no GL: {err}")
    seen = []
    capture = rec.capture
    rec.capture = lambda data, captions=None, **kw: (
        seen.append(captions) or capture(data, captions, **kw)
    )
    try:
        states = np.repeat(qpos[None, :], 50, axis=0)  # 0.4 s at 125 Hz: 10 frames at 25/s
        n = film_contrast(rec, Contrast(states=states, rate_hz=125.0, contact={12: -0.003}))
    finally:
        rec.close()
    assert n == TITLE_FRAMES + 10 == rec.frames == len(seen)
    warnings = [c[2] for c in seen if c[2].startswith("!")]
    assert warnings == ["!CONTACT: arms overlap by 3.0 mm"]  # frame 2 covers samples 10..14
