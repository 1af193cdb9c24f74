"""rob-twin excite: a certified multi-sine excitation of both arms, as a plan file and a
scenario that plays it, with what it excites (simulated, short 4 s motions)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.poses import EXCITATION_START
from rob_twin.planners.excitation import (
    ExcitationConfig,
    ExcitationError,
    envelope,
    excitation_path,
    harmonics,
    window,
)
from rob_twin.planners.excitation_summary import PARAMETERS
from rob_twin.planners.plan_file import load_plan_file
from rob_twin.planners.retime import JointLimits, limit_report

SECONDS = 4.0
LIMITS = JointLimits.uniform(14, 0.9, 2.5, 15.0)  # planning_config(), both arms


def _excite(capsys, out, *extra) -> tuple[int, dict, str]:
    code = main(["excite", "--out", str(out), "--seconds", str(SECONDS), "--json", *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("excite")
    code = main(
        ["excite", "--out", str(out), "--seconds", str(SECONDS), "--seed", "3"]
        + ["--validation", str(out / "validation")]
    )
    assert code == 0
    return out


def _arm_bounds():
    from rob_twin.models.dimensions import ARM_LOWER_RAD, ARM_UPPER_RAD

    return np.array(ARM_LOWER_RAD * 2), np.array(ARM_UPPER_RAD * 2)


def test_written_plan_certifies_with_coal(written, capsys):
    assert main(["certify", str(written / "excite_plan.json"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["pairs_checked"] > 0


def test_every_sample_within_the_limits_and_the_fraction(written):
    doc = load_plan_file(written / "excite_plan.json")
    q = np.hstack([np.asarray(doc["q_rad"][a]) for a in ("right", "left")])
    qd = np.hstack([np.asarray(doc["qd_rad_s"][a]) for a in ("right", "left")])
    qdd = np.hstack([np.asarray(doc["qdd_rad_s2"][a]) for a in ("right", "left")])
    start = np.array(EXCITATION_START["right"] + EXCITATION_START["left"])
    lo, hi = window(start, *_arm_bounds(), 0.3)
    assert np.all(q >= lo - 1e-12) and np.all(q <= hi + 1e-12)
    assert limit_report(q, qd, qdd, 1 / 125, LIMITS).respected()
    # at rest at the start pose at both ends, and moving in between
    for k in (0, -1):
        assert np.allclose(q[k], start, atol=1e-12) and np.allclose(qd[k], 0, atol=1e-12)
    assert np.all(np.ptp(q, axis=0) > 0.05)
    assert doc["hardware_io"] is False and doc["t_s"][-1] == pytest.approx(SECONDS)


def test_the_scenario_runs_and_the_arms_follow_the_plan(written):
    from rob_twin.twin.scenario.run import Scenario, run_scenario

    sc = Scenario.load(written / "excite.json")
    assert sc.plans[0].plan_file is not None and "armature" in _about(written)
    result = run_scenario(sc, record=False, progress=False)
    assert result.refused_targets == {"right": {}, "left": {}}
    (row,) = result.plans
    assert row["status"] == "success" and row["outcome"] == "completed", row
    doc = load_plan_file(written / "excite_plan.json")
    t_plan = np.asarray(doc["t_s"])
    times = np.asarray(result.times)
    for arm in ("right", "left"):
        planned = np.asarray(doc["q_rad"][arm])
        commanded = np.asarray(result.commanded[arm])
        measured = np.asarray(result.measured[arm])

        def error(of: np.ndarray, start_s: float, planned=planned) -> float:
            inside = (times >= start_s) & (times <= start_s + t_plan[-1])
            at = times[inside] - start_s
            expected = np.stack([np.interp(at, t_plan, planned[:, j]) for j in range(7)], 1)
            return float(np.max(np.abs(of[inside] - expected)))

        # the executor starts the plan shortly after the step's time (its lead)
        starts = sc.plans[0].t + np.arange(0.0, 0.2, 0.001)
        best = min(starts, key=lambda s: error(commanded, s))
        assert error(commanded, best) < 0.01, arm  # the owners publish the plan as written
        assert error(measured, best) < 0.03, arm  # and the drives follow it
        assert np.all(np.ptp(measured, axis=0) > 0.8 * np.ptp(planned, axis=0)), arm


def _about(folder) -> str:
    return json.loads((folder / "excite.json").read_text())["about"]


def test_summary_names_each_parameter_and_its_figure(written, tmp_path, capsys):
    code, out, err = _excite(capsys, tmp_path, "--seed", "3")
    assert code == 0 and out["ok"] and out["hardware_io"] is False
    doc = load_plan_file(tmp_path / "excite_plan.json")
    assert doc["excitation"] == out["excitation"]
    qd = np.asarray(doc["qd_rad_s"]["left"])
    by_name = {p["parameter"]: p for p in out["excitation"]["parameters"]}
    assert list(by_name) == [p[0] for p in PARAMETERS]
    peak = by_name["damping"]["per_joint"]["left"]
    assert peak == pytest.approx(np.abs(qd).max(axis=0), abs=1e-4)  # the figure, recomputed
    reversals = by_name["frictionloss"]["per_joint"]["right"]
    qd_r = np.asarray(doc["qd_rad_s"]["right"])
    for j, count in enumerate(reversals):
        v = qd_r[:, j][np.abs(qd_r[:, j]) > 1e-3]
        assert count == np.count_nonzero(np.diff(np.sign(v)))
    for name, p in by_name.items():
        assert len(p["per_joint"]["right"]) == 7 and p["range"][0] <= p["range"][1]
        assert name in err and name in _about(tmp_path)  # printed and in the scenario
    # the same seed writes the same excitation as the fixture's run
    assert json.loads((written / "excite_plan.json").read_text())["q_rad"] == doc["q_rad"]


def test_a_colliding_excitation_is_refused_naming_samples_and_pairs(tmp_path, capsys):
    # at home link3 is 16.5 mm from the arm's mount: 30 % of J2's range brings it within 5 mm
    code, out, err = _excite(capsys, tmp_path, "--start", "home", "--fraction", "0.3")
    assert code == 1 and out["ok"] is False
    refused = out["refused"]
    assert refused["kind"] == "collision" and refused["colliding_samples"] >= 1
    first = refused["hits"][0]
    assert "mount_geom" in first["pair"] and first["distance_m"] < 0.005
    assert f"sample {first['sample']}" in err and not any(tmp_path.iterdir())
    # a smaller fraction at the same start fits
    code, out, _ = _excite(capsys, tmp_path, "--start", "home", "--fraction", "0.1")
    assert code == 0 and out["certified"] is True


def test_the_validation_excitation_plays_other_tones_and_phases(written, capsys):
    fit = load_plan_file(written / "excite_plan.json")
    val = load_plan_file(written / "validation" / "excite_plan.json")
    fit_cfg, val_cfg = fit["excitation"]["config"], val["excitation"]["config"]
    # the validation seed defaults to --seed + 1
    assert (fit_cfg["seed"], val_cfg["seed"]) == (3, 4) and val_cfg["role"] == "validation"
    assert val_cfg["period_s"] != fit_cfg["period_s"]

    def tones(cfg: dict) -> set[float]:
        c = ExcitationConfig(seconds=SECONDS, period_s=cfg["period_s"])
        return {round(k / c.period_s, 9) for i in range(14) for k in harmonics(i, c)}

    assert tones(fit_cfg) and not tones(fit_cfg) & tones(val_cfg)  # no tone shared
    q_fit = np.hstack([np.asarray(fit["q_rad"][a]) for a in ("right", "left")])
    q_val = np.hstack([np.asarray(val["q_rad"][a]) for a in ("right", "left")])
    assert np.abs(q_fit - q_val).max() > 0.05
    start = np.array(EXCITATION_START["right"] + EXCITATION_START["left"])
    lo, hi = window(start, *_arm_bounds(), 0.3)
    assert np.all(q_val >= lo - 1e-12) and np.all(q_val <= hi + 1e-12)
    assert np.allclose(q_val[0], start, atol=1e-12) and np.allclose(q_val[-1], start, atol=1e-12)
    # certified like the fit excitation, and its scenario plays it
    assert main(["certify", str(written / "validation" / "excite_plan.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    scenario = json.loads((written / "validation" / "excite.json").read_text())
    assert "validation" in scenario["about"] and scenario["plans"][0]["plan"].endswith(
        str(written / "validation" / "excite_plan.json")
    )


def test_a_validation_that_would_repeat_the_fit_exits_2_writing_nothing(tmp_path, capsys):
    out = tmp_path / "fit"
    code, doc, _ = _excite(capsys, out, "--validation", str(out))
    assert code == 2 and "--validation" in doc["error"] and "another folder" in doc["error"]
    code, doc, _ = _excite(
        capsys, tmp_path / "b", "--validation", str(tmp_path / "c"), "--validation-seed", "0"
    )
    assert code == 2 and "--validation-seed 0" in doc["error"]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("field", "value"), [("fraction", 1.5), ("fraction", 0.0), ("seconds", 2.0)]
)
def test_settings_out_of_range_are_typed_errors(field, value):
    with pytest.raises(ExcitationError) as err:
        ExcitationConfig(**{field: value})
    assert isinstance(err.value, InvalidValueError)
    assert err.value.field == field and str(value) in str(err.value)


def test_a_fraction_the_limits_refuse_exits_2(tmp_path, capsys):
    code, out, _ = _excite(capsys, tmp_path, "--fraction", "1.5")
    assert code == 2 and "fraction" in out["error"] and "(0, 1]" in out["error"]
    # from home J7 sits at its limit: the whole range needs a ramp faster than allowed
    code, out, _ = _excite(capsys, tmp_path, "--start", "home", "--fraction", "1.0")
    assert code == 2 and "velocity" in out["error"] and "0.855" in out["error"]
    assert not any(tmp_path.iterdir())


def test_envelope_derivatives_match_finite_differences():
    t = np.linspace(-0.5, 5.5, 60001)
    e = envelope(t, 1.5, 5.0)
    dt = t[1] - t[0]
    for n in range(3):
        numeric = np.gradient(e[n], dt)
        assert np.max(np.abs(numeric - e[n + 1])) < 1e-2 * max(1.0, np.abs(e[n + 1]).max())
    assert e[0][t <= 0].max() == 0 and e[0][t >= 5.0].max() == pytest.approx(0, abs=1e-12)
    assert e[0][(t > 1.5) & (t < 3.5)].min() == 1


@pytest.mark.parametrize("seed", [0, 7])
def test_paths_rest_at_the_ends_and_keep_window_and_limits(seed):
    start = np.array(EXCITATION_START["right"] * 2)
    lo, hi = _arm_bounds()
    config = ExcitationConfig(seconds=5.0, fraction=0.4)
    names = tuple(f"j{i}" for i in range(14))
    path = excitation_path(start, lo, hi, LIMITS, names, config, seed)
    t = np.linspace(0, 5.0, 5001)
    q, qd, qdd, jerk = path.derivatives(t)
    wlo, whi = window(start, lo, hi, 0.4)
    assert np.all(q >= wlo - 1e-12) and np.all(q <= whi + 1e-12)
    for x, limit in ((qd, 0.9), (qdd, 2.5), (jerk, 15.0)):
        assert np.abs(x).max() <= 0.95 * limit * (1 + 1e-3)
    for k in (0, -1):
        assert np.allclose(q[k], start) and np.allclose([qd[k], qdd[k], jerk[k]], 0, atol=1e-9)
    # analytic derivatives agree with the positions they come from
    assert np.allclose(np.gradient(q, t, axis=0)[1:-1], qd[1:-1], atol=2e-3)
