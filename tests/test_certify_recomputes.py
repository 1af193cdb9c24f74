"""``rob-twin certify`` recomputes, never trusts: every figure of a plan file is a
claim re-derived from the model and the samples. A claim that differs from the
recomputation exits 1 naming its field (``disagreement_fields``); a field out of its range
on its own, or a key the format does not have, exits 2 (``PlanFileError``) before any coal
query. One plan per module (``rob-twin plan examples/goals.json`` on ROB), tampered copies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from rob_twin.cli.main import main as cli_main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "goals.json"


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    assert cli_main(["plan", str(EXAMPLE), "--out", str(out), "--json"]) == 0
    return json.loads(out.read_text())


def _certify(tmp_path, capsys, doc) -> tuple[int, dict]:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    code = cli_main(["certify", str(path), "--json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err, out.err
    return code, json.loads(out.out)


def _disagrees(tmp_path, capsys, doc, field: str) -> dict:
    code, out = _certify(tmp_path, capsys, doc)
    assert code == 1 and out["ok"] is False, out
    assert field in out["disagreement_fields"], out["disagreements"]
    assert any(line.startswith(field) for line in out["disagreements"]), out["disagreements"]
    return out


def _refused(tmp_path, capsys, doc, field: str) -> dict:
    code, out = _certify(tmp_path, capsys, doc)
    assert code == 2 and out["type"] == "PlanFileError", out
    assert f"{field}=" in out["error"] and "valid:" in out["error"], out["error"]
    assert "\n" not in out["error"]
    return out


def test_the_untouched_plan_agrees(document, tmp_path, capsys):
    code, out = _certify(tmp_path, capsys, document)
    assert code == 0 and out["ok"] and out["disagreement_fields"] == []


# ------------------------------------------------------------------ the certificate's figures


def test_a_raised_far_pair_bound_is_a_disagreement(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    cert = doc["certificate"]
    assert cert["pairs_far"] > 0 and cert["far_pairs_min_m"] < 0.05  # 0.0142 on ROB
    cert["far_pairs_min_m"] = 1.0
    out = _disagrees(tmp_path, capsys, doc, "certificate.far_pairs_min_m")
    assert "1.0 m claimed" in " ".join(out["disagreements"])


def test_a_negative_allowance_is_refused(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    doc["certificate"]["pairs"][0]["allowance_m"] = -0.01
    out = _refused(tmp_path, capsys, doc, "certificate.pairs[0].allowance_m")
    assert "[0, 1] m" in out["error"]


def test_an_allowance_the_spec_does_not_give_is_a_disagreement(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    doc["certificate"]["pairs"][0]["allowance_m"] = 1.0
    _disagrees(tmp_path, capsys, doc, "certificate.pairs[0].allowance_m")


def test_a_certified_minimum_that_is_not_the_lowest_claim_disagrees(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    doc["certificate"]["certified_min_m"] -= 0.001  # below its own lowest pair
    _disagrees(tmp_path, capsys, doc, "certificate.certified_min_m")


def test_wrong_sample_counts_disagree(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    doc["certificate"]["samples"] += 1
    _disagrees(tmp_path, capsys, doc, "certificate.samples")


def test_an_active_query_the_certificate_never_measured_disagrees(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    t0, t1 = doc["certificate"]["pairs"][0]["active_query_times_s"]
    doc["certificate"]["pairs"][0]["active_query_times_s"] = [t0, t1 - 0.0031]
    doc["certificate"]["pairs"][0]["at_s"] = t0
    _disagrees(tmp_path, capsys, doc, "certificate.pairs[0].active_query_times_s[1]")


# ------------------------------------------------------------------ limits against the samples


def test_a_velocity_limit_below_the_plans_own_peak_is_a_disagreement(document, tmp_path, capsys):
    doc = copy.deepcopy(document)
    peak = max(abs(v) for row in doc["qd_rad_s"]["right"] for v in row)
    assert peak > 0.5  # 0.654 rad/s on this plan
    doc["velocity_rad_s"]["right"] = [0.09] * len(doc["velocity_rad_s"]["right"])
    out = _disagrees(tmp_path, capsys, doc, "velocity_rad_s.right[0]")
    assert "below the plan's own peak speed" in " ".join(out["disagreements"])


def test_an_acceleration_limit_below_the_plans_own_peak_is_a_disagreement(
    document, tmp_path, capsys
):
    doc = copy.deepcopy(document)
    doc["acceleration_rad_s2"]["right"] = [0.1] * len(doc["acceleration_rad_s2"]["right"])
    _disagrees(tmp_path, capsys, doc, "acceleration_rad_s2.right[0]")


@pytest.mark.parametrize(("key", "value"), [("velocity_rad_s", 1e6), ("acceleration_rad_s2", 1e9)])
def test_a_limit_beyond_any_robot_is_refused(document, tmp_path, capsys, key, value):
    doc = copy.deepcopy(document)
    doc[key]["left"][2] = value
    _refused(tmp_path, capsys, doc, f"{key}.left[2]")


# ------------------------------------------------------------------ samples against the model


@pytest.mark.parametrize(("joint", "value"), [(3, -1.0), (0, 10.0)])
def test_positions_outside_the_joint_range_disagree(document, tmp_path, capsys, joint, value):
    """j4 at -1.0 rad (range 0..2.443), j1 at 10 rad, on every sample, velocities left as
    they were: outside the model's range, and the positions no longer follow the velocities."""
    doc = copy.deepcopy(document)
    for row in doc["q_rad"]["right"]:
        row[joint] = value
    out = _disagrees(tmp_path, capsys, doc, f"q_rad.right[0][{joint}]")
    assert "range in the model" in " ".join(out["disagreements"])
    assert any("velocities" in line for line in out["disagreements"])


def test_a_position_that_contradicts_its_velocities_disagrees(document, tmp_path, capsys):
    """One sample moved 5 mrad, inside the joint's range: the file contradicts itself."""
    doc = copy.deepcopy(document)
    doc["q_rad"]["left"][40][1] += 0.005
    out = _disagrees(tmp_path, capsys, doc, "q_rad.left[40][1]")
    assert "a dt^2/4" in " ".join(out["disagreements"])


# ------------------------------------------------------------------ unknown keys


@pytest.mark.parametrize(
    "where",
    [(), ("certificate",), ("certificate", "pairs", 0), ("robot",), ("certificate", "uncertainty")],
)
def test_unknown_keys_are_refused(document, tmp_path, capsys, where):
    doc = copy.deepcopy(document)
    node = doc
    for key in where:
        node = node[key]
    node["trust_me"] = True
    code, out = _certify(tmp_path, capsys, doc)
    assert code == 2 and out["type"] == "PlanFileError", out
    assert "trust_me" in out["error"], out["error"]


@pytest.mark.parametrize("named", ["/dev/zero", "/proc/self/mem", "scene.xml", "/tmp"])
def test_a_plan_file_naming_a_robot_that_is_not_one_is_refused(document, tmp_path, capsys, named):
    doc = copy.deepcopy(document)
    doc["robot"]["file"] = named
    _refused(tmp_path, capsys, doc, "robot.file")


# ------------------------------------------------------------------ plan --out


@pytest.mark.parametrize(
    "target", ["folder", "/proc/self/mem", "/dev/null", "plan.txt", "f/x.json"]
)
def test_plan_out_is_checked_before_planning(tmp_path, capsys, target):
    (tmp_path / "folder").mkdir()
    (tmp_path / "f").write_text("a file")
    out = target if target.startswith("/") else str(tmp_path / target)
    capsys.readouterr()
    code = cli_main(["plan", str(EXAMPLE), "--out", out, "--json"])
    reply = json.loads(capsys.readouterr().out)
    assert code == 2 and reply["type"] == "UsageError", reply
    assert "--out" in reply["error"] and "valid: a .json file path" in reply["error"]
