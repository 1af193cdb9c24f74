"""``rob-twin certify`` refuses what it cannot read: every malformed variant of a
plan file exits 2 with one typed error naming the field and its valid range (never a
traceback, never "AGREES" on NaN), a disagreement exits 1, and only a plan the independent
coal check agrees with exits 0."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from rob_twin.cli.main import main as cli_main
from rob_twin.models.loading import keyframe_state
from rob_twin.models.names import group_arms
from rob_twin.planners.certificate_check import verify_document
from rob_twin.planners.goals import JointGoal
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.plan_file import (
    MAX_PLAN_SAMPLES,
    REQUIRED,
    PlanFileError,
    PlanFileLimits,
    load_plan_file,
    plan_document,
)

NAN = float("nan")


@pytest.fixture(scope="module")
def scene():
    return keyframe_state("home")


@pytest.fixture(scope="module")
def document(scene):
    """A certified two-arm plan as the JSON document ``save_plan`` writes (decoded)."""
    model, home = scene
    group = ArmGroup(model, group_arms())
    group.set_qpos(home)
    q = {a: group.arm_q(a) for a in ("right", "left")}
    goals = {
        "right": JointGoal(q["right"] + np.array([0.3, 0.2, 0.0, -0.3, 0.2, 0.1, 0.2])),
        "left": JointGoal(q["left"] + np.array([-0.2, 0.1, 0.2, -0.2, -0.1, 0.1, 0.3])),
    }
    plan = group.plan(goals, seed=0).unwrap()
    return json.loads(json.dumps(plan_document(group, plan)))


def _certify(tmp_path, capsys, doc=None, raw: bytes | None = None) -> tuple[int, dict, str]:
    path = tmp_path / "plan.json"
    path.write_bytes(raw if raw is not None else json.dumps(doc).encode())
    code = cli_main(["certify", str(path), "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def _refused(tmp_path, capsys, doc=None, raw=None, field: str = "") -> dict:
    code, out, err = _certify(tmp_path, capsys, doc, raw)
    assert code == 2, out
    assert out["type"] == "PlanFileError" and "Traceback" not in err, (out, err)
    assert "valid:" in out["error"] and field in out["error"], out["error"]
    return out


def test_an_untouched_plan_file_agrees_and_exits_0(document, tmp_path, capsys):
    code, out, _ = _certify(tmp_path, capsys, document)
    assert code == 0 and out["ok"] and out["hardware_io"] is False
    assert math.isfinite(out["certified_min_m"]) and out["certified_min_m"] > 0


# ------------------------------------------------------------------ NaN in every array


def _set(doc: dict, path: tuple, value) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


NAN_PLACES = {
    "t_s": ("t_s", 5),
    "q_rad": ("q_rad", "right", 3, 2),
    "qd_rad_s": ("qd_rad_s", "left", 4, 0),
    "reference_qpos": ("reference_qpos", 0),
    "acceleration_rad_s2": ("acceleration_rad_s2", "right", 1),
    "velocity_rad_s": ("velocity_rad_s", "left", 6),
    "margin_m": ("margin_m",),
    "certificate.certified_min_m": ("certificate", "certified_min_m"),
    "certificate.margin_m": ("certificate", "margin_m"),
    "certificate.horizon_m": ("certificate", "horizon_m"),
    "certificate.pairs[0].certified_min_m": ("certificate", "pairs", 0, "certified_min_m"),
}


@pytest.mark.parametrize("where", sorted(NAN_PLACES))
def test_nan_anywhere_is_refused_with_exit_2(document, tmp_path, capsys, where):
    """json.dumps writes NaN as the bare literal, which Python's json reads back."""
    _refused(tmp_path, capsys, _set(document, NAN_PLACES[where], NAN), field="NaN")


@pytest.mark.parametrize("where", sorted(NAN_PLACES))
def test_nan_in_a_document_in_memory_is_a_typed_error(document, scene, where):
    """verify_document checks the document itself, whoever decoded it."""
    with pytest.raises(PlanFileError, match="finite"):
        verify_document(_set(document, NAN_PLACES[where], NAN), scene[0])


def test_nan_in_a_bisection_query_is_refused(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    doc["certificate"]["extra_queries"] = [
        {"t_s": 0.01, "q_rad": [NAN] * sum(len(doc["joint_names"][a]) for a in doc["moving"])}
    ]
    _refused(tmp_path, capsys, doc, field="NaN")


def test_infinity_is_refused(document, tmp_path, capsys):
    doc = _set(document, ("q_rad", "right", 0, 0), float("inf"))
    _refused(tmp_path, capsys, doc, field="Infinity")


# ------------------------------------------------------------------ limits and margins


@pytest.mark.parametrize("value", [-0.005, 0.0])
def test_a_margin_that_is_not_positive_is_refused(document, tmp_path, capsys, value):
    doc = _set(_set(document, ("margin_m",), value), ("certificate", "margin_m"), value)
    _refused(tmp_path, capsys, doc, field="margin_m")


def test_a_colliding_plan_with_a_negative_margin_is_refused(document, tmp_path, capsys):
    """Negative margin, and the certificate's minimum lowered to match a collision."""
    doc = _set(document, ("margin_m",), -0.05)
    doc["certificate"]["margin_m"] = -0.05
    doc["certificate"]["certified_min_m"] = -0.02
    for p in doc["certificate"]["pairs"]:
        p["certified_min_m"] = -0.02
    _refused(tmp_path, capsys, doc, field="margin_m")


def test_margins_of_document_and_certificate_must_agree(document, tmp_path, capsys):
    doc = _set(document, ("certificate", "margin_m"), document["margin_m"] * 2)
    _refused(tmp_path, capsys, doc, field="certificate.margin_m")


@pytest.mark.parametrize("value", [0.0, -2.5])
def test_acceleration_limits_must_be_positive(document, tmp_path, capsys, value):
    doc = _set(document, ("acceleration_rad_s2", "right", 2), value)
    _refused(tmp_path, capsys, doc, field="acceleration_rad_s2")


def test_velocity_limits_must_be_positive(document, tmp_path, capsys):
    doc = _set(document, ("velocity_rad_s", "left", 0), -1.0)
    _refused(tmp_path, capsys, doc, field="velocity_rad_s")


# ------------------------------------------------------------------ pairs


def test_an_emptied_pair_list_is_refused(document, tmp_path, capsys):
    _refused(tmp_path, capsys, _set(document, ("certificate", "pairs"), []), field="pairs")


def test_a_dropped_lowest_pair_is_a_disagreement(document, tmp_path, capsys):
    """The certificate must list the pair it names as its lowest (the planner lists it
    first); a list without it disagrees (exit 1)."""
    doc = copy.deepcopy(document)
    del doc["certificate"]["pairs"][0]
    code, out, _ = _certify(tmp_path, capsys, doc)
    assert code == 1 and not out["ok"]
    assert any("not listed" in line for line in out["disagreements"]), out["disagreements"]


def test_a_pair_listed_twice_is_refused(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    doc["certificate"]["pairs"].append(doc["certificate"]["pairs"][0])
    _refused(tmp_path, capsys, doc, field="pairs")


def test_a_wrong_pair_count_is_a_disagreement(document, tmp_path, capsys):
    doc = _set(document, ("certificate", "pairs_total"), document["certificate"]["pairs_total"] - 1)
    code, out, _ = _certify(tmp_path, capsys, doc)
    assert code == 1 and any("pairs_total" in x for x in out["disagreements"])


def test_an_uncertified_certificate_never_exits_0(document, tmp_path, capsys):
    code, out, _ = _certify(tmp_path, capsys, _set(document, ("certificate", "certified"), False))
    assert code == 1 and any("not certified" in x for x in out["disagreements"])


def test_a_foreign_model_hash_is_a_disagreement(document, tmp_path, capsys):
    code, out, _ = _certify(
        tmp_path, capsys, _set(document, ("certificate", "model_hash"), "0" * 16)
    )
    assert code == 1 and any("model hash" in x for x in out["disagreements"])


# ------------------------------------------------------------------ shapes and types


SHAPES = {
    "q_rad row": (("q_rad", "right", 4), [0.1] * 6),
    "qd_rad_s rows": (("qd_rad_s", "left"), [[0.0] * 7] * 3),
    "acceleration_rad_s2": (("acceleration_rad_s2", "right"), [2.0] * 6),
    "velocity_rad_s": (("velocity_rad_s", "left"), [1.0] * 8),
    "reference_qpos": (("reference_qpos",), [0.0] * 5),
    "t_s decreasing": (("t_s", 3), -1.0),
    "t_s type": (("t_s",), "0.0 0.008"),
    "moving unknown arm": (("moving",), ["right", "middle"]),
    "moving empty": (("moving",), []),
    "joint_names unknown joint": (("joint_names", "right", 2), "right/j99"),
    "arms type": (("arms",), ["right", "left"]),
    "model_hash type": (("certificate", "model_hash"), 7),
    "uncertainty": (("certificate", "uncertainty"), {"pivot_m": -1.0}),
    "measured_sample_index": (("certificate", "measured_sample_index"), [0, 2.5, 3]),
    "extra_queries": (("certificate", "extra_queries"), [{"t_s": 0.01, "q_rad": [0.0] * 3}]),
    "format": (("format",), "something else"),
    "hardware_io": (("hardware_io",), True),
    "certified type": (("certificate", "certified"), "yes"),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_wrong_shapes_and_types_are_refused(document, tmp_path, capsys, case):
    path, value = SHAPES[case]
    _refused(tmp_path, capsys, _set(document, path, value))


@pytest.mark.parametrize("key", REQUIRED)
def test_each_missing_key_is_refused(document, tmp_path, capsys, key):
    doc = copy.deepcopy(document)
    del doc[key]
    _refused(tmp_path, capsys, doc, field=key)


@pytest.mark.parametrize("key", ["pairs", "model_hash", "horizon_m", "uncertainty", "certified"])
def test_each_missing_certificate_key_is_refused(document, tmp_path, capsys, key):
    doc = copy.deepcopy(document)
    del doc["certificate"][key]
    _refused(tmp_path, capsys, doc, field=key)


# ------------------------------------------------------------------ size and bytes


def test_a_huge_sample_count_is_refused_before_any_check(document, tmp_path, capsys):
    n = MAX_PLAN_SAMPLES + 1
    doc = copy.deepcopy(document)
    doc["t_s"] = [k * 0.008 for k in range(n)]
    for key in ("q_rad", "qd_rad_s"):
        for a in doc["moving"]:
            doc[key][a] = [doc[key][a][0]] * n
    doc["certificate"]["measured_sample_index"] = None
    out = _refused(tmp_path, capsys, doc, field="t_s")
    assert str(MAX_PLAN_SAMPLES) in out["error"]


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path, capsys):
    path = tmp_path / "big.json"
    with path.open("wb") as f:  # sparse: nothing is written, nothing may be read
        f.truncate(PlanFileLimits().max_bytes + 1)
    code = cli_main(["certify", str(path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["type"] == "PlanFileError" and "size" in out["error"]


def test_the_size_limit_is_a_setting(document, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(document))
    with pytest.raises(PlanFileError, match="size"):
        load_plan_file(path, PlanFileLimits(max_bytes=1000))


GARBAGE = {
    "binary": b"\xff\xfe\x00\x01garbage\x80",
    "not json": b"{not json",
    "empty": b"",
    "a list": b"[1, 2, 3]",
    "null": b"null",
    "deep": b"[" * 5000 + b"]" * 5000,
    "huge integer": b'{"t_s": [' + b"9" * 5000 + b"]}",
    "duplicate key": b'{"margin_m": 0.005, "margin_m": -1}',
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_garbage_bytes_are_refused(tmp_path, capsys, case):
    _refused(tmp_path, capsys, raw=GARBAGE[case])


def test_a_directory_or_missing_file_is_refused(tmp_path, capsys):
    for target in (tmp_path, tmp_path / "absent.json"):
        code = cli_main(["certify", str(target), "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 2 and out["type"] == "PlanFileError", out


def test_a_plan_file_error_names_field_value_and_range(document, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_set(document, ("margin_m",), -0.005)))
    with pytest.raises(PlanFileError) as info:
        load_plan_file(path)
    err = info.value
    assert err.field == "margin_m" and err.value == -0.005 and "> 0" in err.valid
    assert isinstance(err, ValueError)
