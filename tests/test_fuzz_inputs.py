"""The fuzz campaign over the files and lines a user or a peer hands rob-twin: each case
ends in a clean refusal (the surface's typed error, or exit 2, in one line naming the field
and the valid range; no traceback; nothing taken) or in a harmless acceptance (a value the
property checks against the surface's own bounds). ``certify`` exits 1 or 2, never 0, for a
plan whose claims were made false beyond their tolerance.

Surfaces: tampered plan files (``rob-twin certify``), calibration files, robot files,
control-port lines with repeated keys or cut short, joint-state parquet episodes, scenario
files, goals files, and ``study``'s ``--workers`` and ``--out``. Budgets and the outcome
tally: ``fuzz_support``; ``make test`` runs a seeded slice of each, ``make fuzz`` the
campaign.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import shutil
import tomllib
from pathlib import Path

import numpy as np
import pytest
from fuzz_support import (
    JSONISH,
    NASTY,
    NUMBERS,
    budget,
    clean_exit,
    cli,
    get,
    json_text,
    leaves,
    mutated,
    one_line_refusal,
    record,
    toml_text,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from rob_twin.models.errors import RobTwinError

pytestmark = pytest.mark.fuzz
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_GOALS = ROOT / "examples" / "goals.json"
_serial = itertools.count()


def _fresh(tmp_path: Path, name: str) -> Path:
    """A new folder under ``tmp_path`` for one case (cases of a property share tmp_path)."""
    folder = tmp_path / f"{name}{next(_serial)}"
    folder.mkdir()
    return folder


# --- plan files (rob-twin certify) ---------------------------------------------------------


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> dict:
    """``rob-twin plan examples/goals.json`` on ROB (seed 0): a certified plan file."""
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    code, _, err = cli(["plan", str(EXAMPLE_GOALS), "--out", str(out), "--json"])
    assert code == 0, err
    return json.loads(out.read_text())


def _certify(folder: Path, doc) -> tuple[int, dict]:
    path = folder / "plan.json"
    path.write_text(json_text(doc))
    code, out, err = cli(["certify", str(path), "--json"])
    return code, clean_exit(code, out, err)


def _certify_outcome(code: int) -> str:
    return {0: "accepted", 1: "disagreed", 2: "refused"}[code]


def _away(data, low: float, high: float) -> float:
    """A signed offset with magnitude in [low, high]."""
    size = data.draw(st.floats(low, high))
    return size if data.draw(st.booleans()) else -size


def _joint(data, doc) -> tuple[str, int]:
    arm = data.draw(st.sampled_from(doc["moving"]))
    return arm, data.draw(st.integers(0, len(doc["joint_names"][arm]) - 1))


# Each makes one claim of the plan false beyond its tolerance (planners/certificate_claims.py:
# figures to 1e-6, coal's far-pair bound within 2e-4 m, positions against their velocities
# within a dt^2/4 of the acceleration limit + 1e-6 rad: 4e-5 rad on this plan); returns
# the field it changed.
def _false_certified_min(data, doc):
    doc["certificate"]["certified_min_m"] += _away(data, 2e-6, 1.0)
    return "certificate.certified_min_m"


def _false_pair_figure(data, doc):
    pairs = doc["certificate"]["pairs"]
    i = data.draw(st.integers(0, len(pairs) - 1))
    key = data.draw(st.sampled_from(["certified_min_m", "envelope_min_m", "allowance_m"]))
    pairs[i][key] += _away(data, 2e-6, 1.0)
    return f"certificate.pairs[{i}].{key}"


def _false_far_bound(data, doc):
    """Raised 1 mm or more above the bound coal gives (0.2 mm tolerance; the stored bound is
    coal's within 0.1 mm on this plan), or lowered below the lowest listed pair (then the
    certificate's minimum is no longer the lower of the two)."""
    cert = doc["certificate"]
    lowest = min(p["certified_min_m"] for p in cert["pairs"])
    if data.draw(st.booleans()):
        cert["far_pairs_min_m"] += data.draw(st.floats(1e-3, 10.0))
    else:
        cert["far_pairs_min_m"] = lowest - data.draw(st.floats(2e-6, 1.0))
    return "certificate.far_pairs_min_m"


def _false_count(data, doc):
    key = data.draw(st.sampled_from(["samples", "sample_queries", "measured_samples"]))
    doc["certificate"][key] += data.draw(st.integers(-1000, 1000).filter(bool))
    return f"certificate.{key}"


def _false_limit(data, doc):
    """A velocity or acceleration limit set below the plan's own peak on that joint."""
    key, samples = data.draw(
        st.sampled_from([("velocity_rad_s", "qd_rad_s"), ("acceleration_rad_s2", "qdd_rad_s2")])
    )
    arm, j = _joint(data, doc)
    peak = max(abs(row[j]) for row in doc[samples][arm])
    assume(peak > 1e-3)
    doc[key][arm][j] = peak * data.draw(st.floats(0.0, 0.999))
    return f"{key}.{arm}[{j}]"


def _false_position(data, doc):
    """One sample moved 1 mrad or more, or one joint outside its range on every sample."""
    arm, j = _joint(data, doc)
    rows = doc["q_rad"][arm]
    if data.draw(st.booleans()):
        k = data.draw(st.integers(0, len(rows) - 1))
        rows[k][j] += _away(data, 1e-3, 10.0)
        return f"q_rad.{arm}[{k}][{j}]"
    value = data.draw(st.sampled_from([-1.0, 1.0])) * data.draw(st.floats(3.6, 50.0))
    for row in rows:  # every joint's range on ROB lies within +-3.5 rad
        row[j] = value
    return f"q_rad.{arm}[*][{j}]"


def _false_velocity(data, doc):
    """One velocity sample changed by 0.05 rad/s or more (its trapezoid moves 2e-4 rad)."""
    arm, j = _joint(data, doc)
    rows = doc["qd_rad_s"][arm]
    k = data.draw(st.integers(0, len(rows) - 1))
    rows[k][j] += _away(data, 0.05, 50.0)
    return f"qd_rad_s.{arm}[{k}][{j}]"


def _false_model_hash(data, doc):
    new = data.draw(st.text("0123456789abcdef", min_size=16, max_size=16))
    assume(new != doc["certificate"]["model_hash"])
    doc["certificate"]["model_hash"] = new
    return "certificate.model_hash"


FALSE_CLAIMS = [
    _false_certified_min,
    _false_pair_figure,
    _false_far_bound,
    _false_count,
    _false_limit,
    _false_position,
    _false_velocity,
    _false_model_hash,
]


@budget(8, share=0.1)
@given(data=st.data())
def test_certify_never_agrees_with_a_claim_made_false(plan, tmp_path, data):
    doc = copy.deepcopy(plan)
    field = data.draw(st.sampled_from(FALSE_CLAIMS))(data, doc)
    code, reply = _certify(_fresh(tmp_path, "plan"), doc)
    record("certify: false claims", _certify_outcome(code))
    assert code in (1, 2), (field, reply)


def _number_paths(doc) -> list[tuple]:
    return [
        p for p, v in leaves(doc) if p and isinstance(v, int | float) and not isinstance(v, bool)
    ]


@budget(8, share=0.1)
@given(st.integers(0, 10_000), NUMBERS | NASTY, st.booleans())
def test_certify_any_number_changed(plan, tmp_path, pick, value, scale):
    """Any number of the file replaced (or, with ``scale``, multiplied by the value):
    refused, a disagreement, or accepted; never another error."""
    paths = _number_paths(plan)
    if scale and isinstance(value, int | float) and not isinstance(value, bool):
        old = get(plan, paths[pick % len(paths)])
        try:
            value = old * value
        except OverflowError:
            value = math.inf
    doc = mutated(plan, pick, value, paths)
    code, _ = _certify(_fresh(tmp_path, "plan"), doc)
    record("certify: any number", _certify_outcome(code))


KEY = st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
# values the JSON reader takes (finite): the key is the one thing wrong
PLAIN = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20)


@budget(8, share=0.1)
@given(st.integers(0, 10_000), KEY, PLAIN | st.lists(PLAIN, max_size=3))
def test_certify_refuses_a_key_the_format_does_not_have(plan, tmp_path, pick, key, value):
    """Any object but ``arms`` (arm name -> its joints, an open map whose every joint the
    model must have, in one arm only; ``certify`` rebuilds the group from it)."""
    dicts = [p for p, v in leaves(plan) if isinstance(v, dict) and p != ("arms",)]
    path = dicts[pick % len(dicts)]
    doc = copy.deepcopy(plan)
    node = get(doc, path)
    assume(key not in node)
    node[key] = value
    code, reply = _certify(_fresh(tmp_path, "plan"), doc)
    record("certify: unknown keys", _certify_outcome(code))
    assert code == 2 and reply["type"] == "PlanFileError", (path, key, reply)
    assert key in reply["error"], reply["error"]


# --- calibration files --------------------------------------------------------------------


@pytest.fixture(scope="module")
def calibration_base():
    """ROB's model, its nominal parameters, and a calibration document that loads."""
    from rob_twin.models.loading import load_scene
    from rob_twin.twin.calibration.calibration_file import calibration_document
    from rob_twin.twin.calibration.parameters import nominal_parameters

    model = load_scene()
    nominals = nominal_parameters(model)
    good = {
        n: {"value": nominals[n], "nominal": nominals[n], "fitted": True}
        for n in ("right/j2/damping", "left/command_delay_s")
    }
    return model, nominals, calibration_document("lab", model, good, [], {}, [])


ENTRY_NUMBER = NUMBERS | NASTY | st.floats(-2.0, 2.0)


@budget(30, share=0.3)
@given(
    data=st.data(),
    value=ENTRY_NUMBER,
    bounds=st.lists(st.sampled_from(["lower", "upper"]), unique=True),
    hardware_io=st.sampled_from(["absent", False, True, 1, 0, "false", None]),
)
def test_calibration_entries_are_bounded_or_refused(
    calibration_base, tmp_path, data, value, bounds, hardware_io
):
    from rob_twin.twin.calibration.calibration_file import (
        CalibrationError,
        load_calibration,
        physical_bounds,
    )

    model, nominals, base = calibration_base
    name = data.draw(st.sampled_from(sorted(nominals)))
    if data.draw(st.booleans()) and isinstance(value, float) and math.isfinite(value):
        value = nominals[name] * value  # around the nominal, where valid values lie
    entry = {"value": value, "fitted": True}
    for key in bounds:
        entry[key] = data.draw(ENTRY_NUMBER)
    doc = copy.deepcopy(base)
    doc["parameters"][name] = entry
    if hardware_io != "absent":
        doc["hardware_io"] = hardware_io
    path = _fresh(tmp_path, "cal") / "cal.json"
    path.write_text(json_text(doc))
    try:
        cal = load_calibration(path, model)
    except CalibrationError as err:
        record("calibration files", "refused")
        # the bounded JSON reader refuses a token (NaN, 10**30) before any field is known
        one_line_refusal(err, f"parameters.{name}", "hardware_io", "number=", "integer=")
        return
    record("calibration files", "accepted")
    lo, hi = physical_bounds(name, nominals[name])
    got = cal.values[name]
    assert lo <= got <= hi and math.isfinite(got)
    assert entry.get("lower", got) <= got <= entry.get("upper", got)
    assert doc.get("hardware_io", False) is False


# --- robot files ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def robot_base(tmp_path_factory):
    """A generated amber robot: (its folder, its robot file as a dict)."""
    from rob_twin.experiments.robot_factory import generate_robot

    made = generate_robot(tmp_path_factory.mktemp("robot") / "gen", 2, family="amber")
    return made.robot_file.parent, tomllib.loads(made.robot_file.read_text())


ROBOT_VALUES = (
    st.floats(-1.0, 1.0)  # inside the ranges: an angle, an offset the file may hold
    | NASTY
    | JSONISH
    | st.sampled_from(["can0", "CAN5", "..", ".", "a" * 16, "eth 0", "can/0", "../../etc"])
    | st.integers(1, 60).map(lambda n: [[0.0]] if n < 2 else json.loads("[" * n + "]" * n))
    | st.lists(NUMBERS, min_size=5, max_size=8)
)


def _robot_case(tmp_path: Path, folder: Path, doc: dict) -> Path:
    case = _fresh(tmp_path, "robot")
    shutil.copy(folder / "scene.xml", case / "scene.xml")
    (case / "robot.toml").write_text(toml_text(doc), encoding="utf-8")
    return case / "robot.toml"


@budget(25, share=0.3)
@given(st.integers(0, 10_000), ROBOT_VALUES | st.just("<delete>"))
def test_robot_files_with_one_field_broken(robot_base, tmp_path, pick, value):
    from rob_twin.models.robot import robot_of

    folder, base = robot_base
    path = _robot_case(tmp_path, folder, mutated(base, pick, value))
    try:
        robot = robot_of(str(path))
        model = robot.model()
    except RobTwinError as err:
        record("robot files", "refused")
        one_line_refusal(err)
        return
    record("robot files", "accepted")
    assert np.all(np.isfinite(model.qpos0)) and np.all(np.isfinite(model.key_qpos))
    for arm in ("right", "left"):
        home = robot.description.arm(arm).home_rad
        assert home is None or np.all(np.abs(np.asarray(home, float)) <= 100.0)


MJCF_NUMBERS = st.sampled_from(["nan", "inf", "-inf", "1e308", "-1e308", "1e400", "-1", "0", ""])


@budget(15, share=0.2)
@given(st.integers(0, 10_000), MJCF_NUMBERS, st.integers(1, 3))
def test_robot_mjcf_with_one_number_broken(robot_base, tmp_path, pick, value, repeat):
    """One numeric attribute of the MJCF (its first ``repeat`` numbers) made hostile."""
    import re

    from rob_twin.models.robot import robot_of

    folder, base = robot_base
    path = _robot_case(tmp_path, folder, base)
    xml = path.parent / "scene.xml"
    text = xml.read_text()
    spots = list(re.finditer(r'(\w+)="(-?[0-9.e+-]+(?: -?[0-9.e+-]+)*)"', text))
    spot = spots[pick % len(spots)]
    numbers = spot.group(2).split()
    numbers[: min(repeat, len(numbers))] = [value] * min(repeat, len(numbers))
    new = f'{spot.group(1)}="{" ".join(numbers)}"'
    xml.write_text(text[: spot.start()] + new + text[spot.end() :])
    try:
        model = robot_of(str(path)).model()
    except RobTwinError as err:
        record("robot MJCF", "refused")
        one_line_refusal(err)
        return
    record("robot MJCF", "accepted")
    assert np.all(np.isfinite(model.qpos0)) and np.all(np.isfinite(model.geom_size))


# --- control-port lines ---------------------------------------------------------------------

FAULT = {"kind": "drop", "arm": "right", "at": 0.5, "duration": 0.1, "probability": 0.3}
COMMANDS = [{"cmd": "status"}, {"cmd": "clear_faults"}, {"cmd": "fault", "fault": FAULT}]


@budget(50)
@given(st.sampled_from(COMMANDS), st.data())
def test_control_lines_with_a_repeated_key_are_refused(command, data):
    """A key repeated at any level, with any second value: refused, naming the key (JSON
    readers would keep one of the two silently: a status could shut the bank down)."""
    from rob_twin.twin.bus.bank_control import ControlError, parse_control

    objects = [p for p, v in leaves(command) if isinstance(v, dict)]
    where = data.draw(st.sampled_from(objects))
    node = get(command, where)
    key = data.draw(st.sampled_from(sorted(node)))
    second = data.draw(PLAIN | st.sampled_from(["shutdown", "status"]))
    text = json.dumps(command)
    inner = json.dumps(node)  # the object's text inside the line: add the key again
    assert inner in text
    line = text.replace(inner, inner[:-1] + f", {json.dumps(key)}: {json_text(second)}}}", 1)
    with pytest.raises(ControlError) as err:
        parse_control(line)
    record("control port lines", "refused")
    assert err.value.reply()["ok"] is False
    assert key in str(err.value), str(err.value)


@budget(50)
@given(st.sampled_from(COMMANDS), st.data())
def test_control_lines_cut_short_are_refused(command, data):
    """Any strict prefix of a command (a line cut anywhere, before its closing brace)."""
    from rob_twin.twin.bus.bank_control import ControlError, parse_control

    text = json.dumps(command).encode()
    cut = data.draw(st.integers(0, len(text) - 1))
    with pytest.raises(ControlError) as err:
        parse_control(text[:cut])
    record("control port lines", "refused")
    assert err.value.reply()["ok"] is False and "\n" not in str(err.value)


# --- joint-state parquet episodes ---------------------------------------------------------

ROW = st.lists(st.floats(-3.0, 3.0), min_size=8, max_size=8)
EXTREME = st.sampled_from(
    [1e300, -1e300, 100.0, -100.0, 4.468, -4.468, 4.47, 101.0, 1e-320, math.nan, math.inf, None]
)


@st.composite
def episodes(draw):
    """{arm: {"t": times, "qpos": rows, optional "qvel"/"qtorque": rows, "action": rows}}:
    ordinary rows, then (half the time) one cell, one row or one time made hostile."""
    arms = draw(st.sampled_from([("right",), ("left",), ("right", "left")]))
    out = {}
    for arm in arms:
        n = draw(st.integers(1, 6))
        arm_data = {"t": sorted(draw(st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n)))}
        for column in ("qpos", "qvel", "qtorque", "action"):
            if column in ("qpos", "action") or draw(st.booleans()):
                arm_data[column] = draw(st.lists(ROW, min_size=n, max_size=n))
        out[arm] = arm_data
    if draw(st.booleans()):
        d = out[draw(st.sampled_from(arms))]
        column = draw(st.sampled_from(sorted(d)))
        k = draw(st.integers(0, len(d["t"]) - 1))
        if column == "t":  # out of order, or not finite
            d["t"][k] = draw(st.sampled_from([math.nan, -1.0, 1e300, -math.inf]))
        elif draw(st.booleans()):
            d[column][k][draw(st.integers(0, 7))] = draw(EXTREME)
        else:
            d[column][k] = draw(st.lists(st.floats(-3.0, 3.0), max_size=6))  # too short
    return out


def _write_episode(folder: Path, episode: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    row_type = pa.list_(pa.float64())
    for arm, d in episode.items():
        obs = {"timestamp": pa.array(d["t"], pa.float64())}
        for column in ("qpos", "qvel", "qtorque"):
            if column in d:
                obs[column] = pa.array(d[column], row_type)
        path = folder / "obs" / "arms" / arm / "state.parquet"
        path.parent.mkdir(parents=True)
        pq.write_table(pa.table(obs), path)
        act = {
            "timestamp": pa.array(d["t"], pa.float64()),
            "value": pa.array(d["action"], row_type),
        }
        path = folder / "action" / "arms" / arm / "qpos.parquet"
        path.parent.mkdir(parents=True)
        pq.write_table(pa.table(act), path)


def _inside(rows: list, bound: float) -> bool:
    return all(
        len(r) >= 7 and all(v is not None and math.isfinite(v) and abs(v) <= bound for v in r[:7])
        for r in rows
    )


@budget(40, share=0.3)
@given(episodes())
def test_parquet_episodes_are_bounded_or_refused(tmp_path, episode):
    from rob_twin.twin.calibration.dataset import (
        MAX_POSITION_RAD,
        MAX_VELOCITY_RAD_S,
        read_joint_dataset,
    )

    folder = _fresh(tmp_path, "episode")
    _write_episode(folder, episode)
    try:
        rec = read_joint_dataset(folder)
    except RobTwinError as err:
        record("parquet episodes", "refused")
        one_line_refusal(err)
        return
    record("parquet episodes", "accepted")
    rows = sum(len(d["qpos"]) + len(d["action"]) for d in episode.values())
    assert len(rec.frames) == 7 * rows
    for d in episode.values():
        assert _inside(d["qpos"], MAX_POSITION_RAD) and _inside(d["action"], MAX_POSITION_RAD)
        assert _inside(d.get("qvel", []), MAX_VELOCITY_RAD_S)
        assert _inside(d.get("qtorque", []), math.inf)


# --- scenario files -------------------------------------------------------------------------

HOME = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]


@st.composite
def scenarios(draw):
    """A scenario with keyframes and faults: times anywhere (beyond the run too), counts up
    to past the caps (10,000 keyframes, 1,000 faults), durations hostile or ordinary."""
    duration = draw(st.floats(0.05, 5.0) | NUMBERS)
    raw = {"name": "fuzz", "duration": duration}
    n_key = draw(st.sampled_from([0, 1, 3, 10_000, 10_001, 100_000]))
    if n_key:
        q = draw(st.lists(st.floats(-1.0, 1.0), min_size=7, max_size=7) | st.just(HOME))
        t = draw(st.floats(0.0, 5.0) | NUMBERS)
        arm = draw(st.sampled_from(["right", "left", "middle", ""]))
        raw["keyframes"] = [{"t": t, "arm": arm, "q": q}] * n_key
    n_fault = draw(st.sampled_from([0, 1, 1_000, 1_001, 100_000]))
    if n_fault:
        at = draw(st.floats(0.0, 5.0) | NUMBERS)
        raw["faults"] = [FAULT | {"at": at}] * n_fault
    return raw


@budget(25, share=0.1)
@given(scenarios())
def test_scenario_files_are_bounded_or_refused(raw):
    from rob_twin.twin.scenario.run import Scenario
    from rob_twin.twin.scenario.schema import MAX_FAULTS, MAX_KEYFRAMES, ScenarioError

    try:
        sc = Scenario.from_dict(raw)
    except ScenarioError as err:
        record("scenario files", "refused")
        assert any(f in str(err) for f in ("duration", "keyframes", "faults")), str(err)
        return
    record("scenario files", "accepted")
    assert 0 < sc.duration <= 3600.0
    assert len(sc.keyframes) <= MAX_KEYFRAMES and len(sc.faults) <= MAX_FAULTS
    assert all(0.0 <= k.t <= sc.duration and np.all(np.isfinite(k.q)) for k in sc.keyframes)
    assert all(0.0 <= f.at <= sc.duration for f in sc.faults)


# --- goals files ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def goals_base():
    from rob_twin.models import keyframe_state
    from rob_twin.models.names import group_arms
    from rob_twin.planners import ArmGroup

    model, home = keyframe_state("home")
    group = ArmGroup(model, group_arms())
    group.set_qpos(home)
    return group, json.loads(EXAMPLE_GOALS.read_text())


@budget(30, share=0.2)
@given(st.integers(0, 10_000), NASTY | JSONISH | NUMBERS | st.just("<delete>"))
def test_goals_files_with_one_field_broken(goals_base, pick, value):
    from rob_twin.planners.goals import JointGoal
    from rob_twin.planners.goals_file import GoalsFileError, goals_request

    group, base = goals_base
    try:
        request = goals_request(mutated(base, pick, value), group)
    except GoalsFileError as err:
        record("goals files", "refused")
        one_line_refusal(err)
        return
    record("goals files", "accepted")
    assert np.all(np.isfinite(request.start_qpos))
    for arm, goal in request.goals.items():
        if isinstance(goal, JointGoal):
            lo, hi = group.joint_limits(arm)
            q = np.asarray(goal.positions, float)
            assert np.all((lo <= q) & (q <= hi))


# --- study --workers and --out -----------------------------------------------------------

STUDY = """name = "fuzz"
model = "rob"
start = "home"
arms = ["right"]
margins_m = [0.005]
count = 1
seed = 0
[goals]
kind = "gaussian"
sigma_rad = 0.8
min_clearance_m = 0.01
"""
BAD_WORKERS = (
    st.integers(-(10**6), 0)
    | st.integers(1025, 10**30)
    | st.sampled_from(["", "1.5", "nan", "two", "1e3", " ", "0x10"])
)


@budget(10, share=0.03)
@given(st.sampled_from(["study", "sweep"]), BAD_WORKERS, st.sampled_from(["file", "/dev/null"]))
def test_study_workers_and_out_are_refused_before_anything_runs(tmp_path, command, workers, out):
    folder = _fresh(tmp_path, "study")
    spec = folder / "spec.toml"
    spec.write_text(STUDY)
    target = folder / "a_file"
    target.write_text("not a folder")
    out = str(target) if out == "file" else out
    argv = [command, str(spec if command == "study" else folder), "--workers", str(workers)]
    code, stdout, err = cli([*argv, "--out", out, "--json"])
    reply = clean_exit(code, stdout, err, allowed=(2,))
    record("study options", "refused")
    assert "--workers" in reply["error"] or "--out" in reply["error"], reply["error"]
    assert sorted(p.name for p in folder.iterdir()) == ["a_file", "spec.toml"]
