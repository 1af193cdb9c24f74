"""A synthetic excitation kept off the robot's body (``twin.calibration.excitation_clearance``):
OpenArm's rubbed its torso from home and is moved clear at full swing, ROB's is left as it
was, a generated robot's comes out clear or with a typed refusal, and a benchmark recording
made with it touches nothing."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.experiments.robot_factory import generate_robot
from rob_twin.models.robot import robot_of
from rob_twin.twin.calibration.excitation_clearance import (
    CLEARANCE_M,
    NoClearExcitationError,
    clear_excitation,
    closest_approach,
)
from rob_twin.twin.calibration.replay_contacts import replay_contacts
from rob_twin.twin.calibration.synthetic import SEEDED_BANDS_HZ, excitation_source
from rob_twin.twin.sim import twin as twin_module

AMPLITUDE_RAD = 0.2


def _maker(robot, seed):
    def sources_of(amplitude, offsets):
        return {
            k: excitation_source(k, amplitude, robot, seed, SEEDED_BANDS_HZ, o)
            for k, o in offsets.items()
        }

    return sources_of


def _sources(robot, seed, amplitude, offsets=None):
    return _maker(robot, seed)(amplitude, offsets or {0: None, 1: None})


def test_openarms_excitation_rubbed_its_torso_and_is_moved_clear_at_full_swing():
    robot = robot_of("openarm")
    hit = closest_approach(robot, _sources(robot, 6400, AMPLITUDE_RAD), 4.0)
    assert hit is not None and hit.distance_m < 0  # inside the torso, not merely near it
    assert "openarm_body_link0_collision" in hit.names and "link" in hit.names
    amplitude, offsets = clear_excitation(robot, _maker(robot, 6400), AMPLITUDE_RAD, 4.0)
    assert amplitude == AMPLITUDE_RAD  # the centre moved, the swing kept
    assert any(np.abs(o).max() > 0 for o in offsets.values())
    assert closest_approach(robot, _sources(robot, 6400, amplitude, offsets), 4.0) is None


def test_robs_seeded_excitation_is_left_as_it_was():
    robot = robot_of("rob")
    amplitude, offsets = clear_excitation(robot, _maker(robot, 6401), AMPLITUDE_RAD, 8.0)
    assert amplitude == AMPLITUDE_RAD
    assert all(not o.any() for o in offsets.values())


@pytest.mark.parametrize("seed", [3, 11])
def test_a_generated_robots_excitation_comes_out_clear_or_refused_by_type(tmp_path, seed):
    robot = robot_of(str(generate_robot(tmp_path, seed, family="damiao").robot_file))
    try:
        amplitude, offsets = clear_excitation(robot, _maker(robot, 7), AMPLITUDE_RAD, 4.0)
    except NoClearExcitationError as err:
        assert f"clearance {CLEARANCE_M * 1000:g} mm" in str(err)
        return
    assert 0 < amplitude <= AMPLITUDE_RAD
    assert closest_approach(robot, _sources(robot, 7, amplitude, offsets), 4.0) is None


def test_the_benchmarks_openarm_recording_touches_nothing_but_its_fingers(tmp_path, monkeypatch):
    """Every physics step of a benchmark recording: no contact but a gripper's own."""
    from rob_twin.experiments.bench_calibration import _record

    robot = robot_of("openarm")
    touched: set[str] = set()
    step = twin_module.Twin.step

    def counting_step(self, n=1):
        for _ in range(n):
            step(self, 1)
            m, d = self.model, self.data
            for c in d.contact[: d.ncon]:
                names = [m.geom(int(g)).name for g in (c.geom1, c.geom2)]
                if not all("finger" in x for x in names):
                    touched.add(" vs ".join(names))

    monkeypatch.setattr(twin_module.Twin, "step", counting_step)
    rec = _record(tmp_path / "fit.log", {}, robot, 2.0, 6400)
    assert not touched
    monkeypatch.undo()
    assert replay_contacts(rec, None, robot) == []  # what calibrate's report would say


def test_calibrate_reports_a_recording_whose_replay_rubs_the_torso(tmp_path, capsys):
    """OpenArm's unseeded excitation from home runs link 4 into the torso: the fit of it
    is written, and its report and output name the contact."""
    import json

    from rob_twin.cli.main import main
    from rob_twin.twin.calibration.synthetic import record_hidden

    robot = robot_of("openarm")
    rec = record_hidden(tmp_path / "rub.log", {}, 3.0, robot=robot)
    found = replay_contacts(rec, None, robot)
    assert found and "openarm_body_link0_collision" in found[0].pair
    assert 0 < found[0].share < 1 and found[0].depth_m > 0 and found[0].first_s > 0
    out = tmp_path / "cal.json"
    code = main(
        ["calibrate", "--robot", "openarm", str(rec), "--fit", "right/j4/friction_fv"]
        + ["--max-iters", "2", "--accept-misfit", "--quiet", "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    report = json.loads(out.with_name("cal_report.json").read_text())
    assert report["contacts"] and report["contacts"][0]["pair"] == found[0].pair
    assert "contact in the replay: openarm_body_link0_collision" in printed
