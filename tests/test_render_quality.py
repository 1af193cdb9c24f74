"""Render quality (fast / full / auto), captions burned into frames, the scenario field."""

from __future__ import annotations

import numpy as np
import pytest

from controllers.errors import RobTwinError
from twin.captions import burn_captions
from twin.render_quality import (
    CHOICES,
    UnknownQualityError,
    is_software_renderer,
    offscreen_settings,
    resolve_quality,
)
from twin.scenario import Scenario
from twin.scenario_schema import ScenarioError


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
    from twin.cli import QUALITY_CHOICES

    assert QUALITY_CHOICES == CHOICES


def test_fast_shrinks_the_offscreen_buffer_only_while_rendering():
    from models.loading import load_scene

    m = load_scene()
    before = (m.vis.global_.offwidth, m.vis.global_.offheight, m.vis.quality.offsamples)
    with offscreen_settings(m, "fast", 320, 240):
        assert (m.vis.global_.offwidth, m.vis.global_.offheight, m.vis.quality.offsamples) == (320, 240, 0)
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

    from models.loading import load_scene
    from twin.video import RenderUnavailable, make_renderer

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
