"""Certificates on robots described in robot files, where ROB's and OpenArm's geometry does not
reach: a plan with no pair within the horizon saves, loads and certifies (its certificate
lists no pair: the far-pair bound certifies it), and arms of box links, whose box-box pairs
MuJoCo 3.17's collider misjudges, get the same figures from the planner as from ``rob-twin
certify``: both measure those pairs with coal (``rob_twin.planners.weak_judge``), and a
dense coal sweep finds no pair below its certified value.

The robot is written here: two six-joint arms of box links on a torso (drive family
``ideal``), their bases ``separation`` apart. (``rob_twin.experiments.robot_factory`` keeps its
generated robots clear of weak pairs; this one is made of them.)"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from rob_twin.cli.main import main as cli_main
from rob_twin.experiments.dense_clearance import check_plan, for_group
from rob_twin.experiments.goal_pairs import goal_pairs
from rob_twin.models.names import arm_joint
from rob_twin.models.robot_description import load_robot_file
from rob_twin.models.robot_model import load_model_of, load_robot_model
from rob_twin.planners.certificate_check import verify_document
from rob_twin.planners.certificate_geometry import _group_geometry
from rob_twin.planners.group import ArmGroup, default_config
from rob_twin.planners.pair_certificate import mujoco_query
from rob_twin.planners.plan_file import (
    PlanFileError,
    load_plan_file,
    save_plan,
    validate_plan_document,
)
from rob_twin.planners.weak_judge import JUDGE_COAL, JUDGE_MUJOCO, coal_capped, judge_for

ARMS = {a: [arm_joint(a, j) for j in range(1, 7)] for a in ("right", "left")}
# goal pairs (goal_pairs seed, its pair numbers; planner seed = pair number) whose plans
# rob-twin certify refused before weak pairs were judged by coal (9.64 mm certified, coal
# 10.92; 14.00 certified, coal 12.26; ...), the last with a pair certified 19.88 mm that the
# dense sweep found at 17.10 mm
DISAGREED = ((3, (29,)), (4, (18, 23)), (5, (25,)))


def _arm(side: str, y: float, base_geoms: bool) -> str:
    p = side[0]
    base = (
        f'<geom name="{p}_base_geom" type="box" size="0.04 0.04 0.02" pos="0 0 -0.04"/>'
        if base_geoms
        else ""
    )
    return f"""
      <body name="{p}_base" pos="0 {y} 0">{base}
        <body name="{p}_l1">
          <joint name="{p}_j1" axis="0 0 1"/>
          <geom name="{p}_l1_geom" type="box" size="0.03 0.03 0.02" pos="0 0 0.02"/>
          <body name="{p}_l2" pos="0 0 0.05">
            <joint name="{p}_j2" axis="0 1 0"/>
            <geom name="{p}_l2_geom" type="box" size="0.11 0.025 0.025" pos="0.13 0 0"/>
            <body name="{p}_l3" pos="0.26 0 0">
              <joint name="{p}_j3" axis="0 1 0" range="-2.4 2.4"/>
              <geom name="{p}_l3_geom" type="box" size="0.09 0.022 0.022" pos="0.11 0 0"/>
              <body name="{p}_l4" pos="0.22 0 0">
                <joint name="{p}_j4" axis="1 0 0"/>
                <geom name="{p}_l4_geom" type="box" size="0.02 0.02 0.02" pos="0.02 0 0"/>
                <body name="{p}_l5" pos="0.05 0 0">
                  <joint name="{p}_j5" axis="0 1 0"/>
                  <geom name="{p}_l5_geom" type="box" size="0.035 0.018 0.018" pos="0.045 0 0"/>
                  <body name="{p}_hand" pos="0.09 0 0">
                    <joint name="{p}_j6" axis="1 0 0"/>
                    <geom name="{p}_hand_geom" type="box" size="0.02 0.04 0.012" pos="0.03 0 0"/>
                  </body>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>"""


def write_robot(folder: Path, separation_m: float, near_torso: bool) -> Path:
    """robot.toml and its MJCF in ``folder``; ``near_torso``: a torso box behind the arms and
    a box under each base (pairs the arms' links pass within the horizon of)."""
    torso = (
        '<geom name="torso_geom" type="box" size="0.06 0.05 0.15" pos="-0.12 0 0"/>'
        if near_torso
        else ""
    )
    half = separation_m / 2
    xml = f"""<mujoco model="boxbot">
  <compiler angle="radian" autolimits="true"/>
  <default><joint limited="true" damping="1" range="-2.0 2.0"/></default>
  <worldbody>
    <body name="torso" pos="0 0 0.8">{torso}{_arm("right", -half, near_torso)}{
        _arm("left", half, near_torso)
    }
    </body>
  </worldbody>
</mujoco>
"""
    (folder / "boxbot.xml").write_text(xml, encoding="utf-8")

    def arm(side: str, yaw: float) -> str:
        p = side[0]
        joints = ", ".join(f'"{p}_j{j}"' for j in range(1, 7))
        return f"""
[arms.{side}]
joints = [{joints}]
tcp_body = "{p}_hand"
tcp_offset_m = [0.05, 0.0, 0.0]
home_rad = [{yaw}, 0.3, 0.6, 0.0, 0.3, 0.0]
"""

    toml = folder / "robot.toml"
    toml.write_text(
        f'name = "boxbot"\nmjcf = "boxbot.xml"\n[drives]\nfamily = "ideal"\nkp = 200.0\n'
        f"{arm('right', -0.2)}{arm('left', 0.2)}",
        encoding="utf-8",
    )
    return toml


def _group(toml: Path) -> ArmGroup:
    model = load_robot_model(load_robot_file(toml))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checker warns of the box-box pairs
        group = ArmGroup(model, ARMS, default_config())
    group.set_qpos(model.key("home").qpos)
    return group


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    """(robot file, group) of box arms 0.7 m apart with nothing else near them."""
    toml = write_robot(tmp_path_factory.mktemp("apart"), 0.7, near_torso=False)
    return toml, _group(toml)


@pytest.fixture(scope="module")
def close(tmp_path_factory):
    """(robot file, group) of box arms 0.26 m apart on a box torso."""
    toml = write_robot(tmp_path_factory.mktemp("close"), 0.26, near_torso=True)
    return toml, _group(toml)


@pytest.fixture(scope="module")
def far_plan_file(apart, tmp_path_factory):
    """A plan of both arms whose pairs never come within the horizon, saved."""
    toml, group = apart
    goals = {a: group.arm_q(a) + np.array([0.15, 0.1, -0.1, 0.2, 0.1, 0.2]) for a in ARMS}
    plan = group.plan(goals, seed=0).unwrap()
    cert = plan.certificate
    assert cert.certified and cert.pairs == () and cert.pairs_far == cert.pairs_total > 0
    assert cert.certified_min_m == cert.far_pairs_min_m >= group.config.collision.margin_m
    return save_plan(tmp_path_factory.mktemp("far") / "plan.json", group, plan)


def _certify(capsys, path: Path, toml: Path) -> tuple[int, dict]:
    code = cli_main(["certify", str(path), "--model", str(toml), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_plan_with_no_pair_near_saves_loads_and_certifies(apart, far_plan_file, capsys):
    toml, _ = apart
    doc = load_plan_file(far_plan_file)
    cert = doc["certificate"]
    assert cert["pairs"] == [] and cert["pairs_far"] == cert["pairs_total"]
    code, out = _certify(capsys, far_plan_file, toml)
    assert code == 0 and out["ok"], out["disagreements"]
    # coal re-derives every pair from the model: none is below the far-pair bound
    assert out["certified_min_m"] >= cert["far_pairs_min_m"]
    assert out["pairs_checked"] == cert["pairs_total"]


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("pairs_far", -1, r"pairs.*an empty list.*pairs_far"),  # some pair measured near
        ("certified_min_m", 0.02, r"certified_min_m.*empty pair list"),
        ("far_pairs_min_m", None, r"far_pairs_min_m.*far-pair bound"),
        ("pairs_total", 0.5, r"pairs_total.*integer >= 0"),
    ],
)
def test_an_empty_pair_list_stands_only_on_the_far_pair_bound(
    far_plan_file, tmp_path, field, value, match
):
    doc = json.loads(far_plan_file.read_text())
    cert = doc["certificate"]
    cert[field] = cert["pairs_total"] + value if field == "pairs_far" else value
    with pytest.raises(PlanFileError, match=match):
        load_plan_file(_write(tmp_path, doc))


def test_a_certificate_of_no_pair_at_all_is_valid(far_plan_file):
    """Moving arms with no checked pair: nothing to list, no far bound, the horizon."""
    doc = json.loads(far_plan_file.read_text())
    cert = doc["certificate"]
    cert.update(pairs_total=0, pairs_far=0, far_pairs_min_m=None, weak_pairs=[])
    cert["certified_min_m"] = cert["horizon_m"]
    validate_plan_document(doc)


def test_a_far_pair_bound_above_coals_figures_is_a_disagreement(
    apart, far_plan_file, tmp_path, capsys
):
    toml, _ = apart
    doc = json.loads(far_plan_file.read_text())
    cert = doc["certificate"]
    cert["certified_min_m"] = cert["far_pairs_min_m"] = cert["horizon_m"] + 0.01
    code, out = _certify(capsys, _write(tmp_path, doc), toml)
    assert code == 1 and any("above coal's" in line for line in out["disagreements"])


def test_mujocos_box_box_figures_are_not_distances_and_the_planner_takes_coals(close):
    """The cause: at random states MuJoCo's box-box contact distances (the horizon as margin)
    miss pairs within the horizon and are off by millimetres; the certificate's query
    reads the weak pairs from coal, exactly as certify measures them."""
    _, group = close
    moving = ("right", "left")
    geometry = _group_geometry(group, moving, 0.0)
    judge = judge_for(group, geometry)
    assert judge is not None and judge.rows.size == geometry.g1.size  # every pair is box-box
    session = group.meter.session(moving, group.reference_qpos)
    horizon = group.meter.config.horizon_m
    plain = mujoco_query(session, geometry, horizon)
    judged = mujoco_query(session, geometry, horizon, judge)
    oracle = judge._oracle()
    lo = np.concatenate([group.joint_limits(a)[0] for a in moving])
    hi = np.concatenate([group.joint_limits(a)[1] for a in moving])
    states = np.random.default_rng(0).uniform(lo, hi, (150, lo.size))
    wrong, each = 0, []
    for q in states:
        oracle.set_qpos(session.full_qpos(q))
        coal_d, _ = coal_capped(oracle, geometry.g1, geometry.g2, horizon)
        each.append(judged(q))
        assert np.array_equal(each[-1], coal_d)
        wrong += int(np.sum(np.abs(plain(q) - coal_d) > 1e-3))
    assert wrong > 10, wrong
    # the final check measures a batch of states at once, with the poses of the kinematics
    # it runs for MuJoCo's contacts: the same figures
    contacts, pos, mat = session.contacts_and_poses_of(states, judge.geoms)
    assert np.array_equal(judge.at_poses(pos, mat), np.array(each)[:, judge.rows])
    again = session.contacts_of(states)
    assert all(np.array_equal(a, b) for a, b in zip(contacts, again, strict=True))


def test_box_link_plans_agree_with_certify_and_the_dense_judge(close, tmp_path):
    toml, group = close
    model = load_model_of(str(toml))
    start = group.reference_qpos.copy()
    for rng_seed, numbers in DISAGREED:
        pairs = goal_pairs(group, max(numbers) + 1, np.random.default_rng(rng_seed))
        for k in numbers:
            group.set_qpos(start)
            plan = group.plan(pairs[k], seed=k).unwrap()
            cert = plan.certificate
            path = save_plan(tmp_path / f"plan_{rng_seed}_{k}.json", group, plan)
            doc = load_plan_file(path)
            weak = doc["certificate"]["weak_pairs"]
            assert len(weak) == cert.pairs_total and {w["why"] for w in weak} == {"box vs box"}
            assert all(w["judge"] == JUDGE_COAL for w in weak)
            assert all(p["judge"] == JUDGE_COAL for p in doc["certificate"]["pairs"])
            report = verify_document(doc, model)
            assert report.ok, (rng_seed, k, report.disagreements)
            assert report.weak_pairs == cert.pairs_total and not report.notes
            # the same coal figures on both sides: the listed pairs agree to rounding; the
            # certificate's minimum is one of them or the far-pair bound, below coal's
            # envelope of those pairs
            assert report.max_pair_difference_m < 1e-6
            assert report.certified_min_m >= cert.certified_min_m - 1e-6
            dense = check_plan(for_group(group, plan.moving), plan)
            assert not dense.counterexamples, dense.counterexamples[0]
            assert dense.true_min_m >= cert.certified_min_m


@pytest.fixture(scope="module")
def close_plan_file(close, tmp_path_factory):
    """One saved plan of the box arms (the first goal pair of ``DISAGREED``)."""
    _, group = close
    rng_seed, (k, *_) = DISAGREED[0]
    group.set_qpos(group.model.key("home").qpos)
    goals = goal_pairs(group, k + 1, np.random.default_rng(rng_seed))[k]
    plan = group.plan(goals, seed=k).unwrap()
    group.set_qpos(group.model.key("home").qpos)
    return save_plan(tmp_path_factory.mktemp("close") / "plan.json", group, plan)


def test_the_cli_certifies_a_box_link_plan_and_says_who_judged(close, close_plan_file, capsys):
    toml, _ = close
    code, out = _certify(capsys, close_plan_file, toml)
    assert code == 0 and out["ok"] and out["weak_pairs"] > 0 and out["notes"] == []
    code = cli_main(["certify", str(close_plan_file), "--model", str(toml)])
    text = capsys.readouterr().out
    kinds = ", ".join(f"{n} {why}" for why, n in out["weak_kinds"].items())
    assert "box vs box" in out["weak_kinds"]
    assert sum(out["weak_kinds"].values()) == out["weak_pairs"]
    assert code == 0 and f"{out['weak_pairs']} weak pairs ({kinds}) judged by coal" in text


def test_a_plan_file_without_judges_still_loads_and_certify_notes_it(
    close, close_plan_file, tmp_path
):
    """Files written before judges were recorded: no ``weak_pairs``, no per-pair ``judge``."""
    toml, _ = close
    doc = json.loads(close_plan_file.read_text())
    del doc["certificate"]["weak_pairs"]
    for p in doc["certificate"]["pairs"]:
        del p["judge"]
    old = load_plan_file(_write(tmp_path, doc))
    report = verify_document(old, load_model_of(str(toml)))
    assert report.ok  # this plan's figures are coal's: they still agree
    assert len(report.notes) == 1 and "records no judges" in report.notes[0]


@pytest.mark.parametrize("case", ["judged by mujoco", "weak pair dropped", "pair judge"])
def test_judges_other_than_the_models_are_disagreements(
    close, close_plan_file, tmp_path, capsys, case
):
    toml, _ = close
    doc = json.loads(close_plan_file.read_text())
    cert = doc["certificate"]
    if case == "judged by mujoco":
        cert["weak_pairs"][0]["judge"] = JUDGE_MUJOCO
        want = "not coal"
    elif case == "weak pair dropped":
        del cert["weak_pairs"][0]
        want = "missing from the certificate's weak_pairs"
    else:
        cert["pairs"][0]["judge"] = JUDGE_MUJOCO
        want = "the planner's judge is coal"
    code, out = _certify(capsys, _write(tmp_path, doc), toml)
    assert code == 1 and any(want in line for line in out["disagreements"]), out


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        (("weak_pairs", 0, "judge"), "eyeballed", "weak_pairs[0].judge"),
        (("weak_pairs", 0, "why"), "", "weak_pairs[0].why"),
        (("pairs", 0, "judge"), 1, "pairs[0].judge"),
        (("weak_pairs",), {"pair": "x"}, "weak_pairs"),
    ],
)
def test_malformed_judges_are_refused(close_plan_file, tmp_path, where, value, field):
    doc = json.loads(close_plan_file.read_text())
    node = doc["certificate"]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(PlanFileError, match=field.replace("[", r"\[").replace("]", r"\]")):
        load_plan_file(_write(tmp_path, copy.deepcopy(doc)))


def test_openarm_has_no_weak_pair_and_keeps_mujocos_figures():
    """OpenArm v2 (meshes): no pair is weak, so no judge is made and every figure stays
    MuJoCo's."""
    from rob_twin.models.names import group_arms

    model = load_robot_model("openarm")
    group = ArmGroup(model, group_arms())
    group.set_qpos(model.key("home").qpos)
    for moving in (("right",), ("right", "left")):
        geometry = _group_geometry(group, moving, 0.0)
        assert geometry.weak_why == () and judge_for(group, geometry) is None


def _geom_name(model, g) -> str:
    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, int(g))


def test_robs_weak_pairs_are_its_links_against_the_table_legs_and_the_can():
    """ROB's capsule links against the cylinder table legs and can (MuJoCo 3.17 can report
    such a pair up to 21 mm farther than it is, tests/test_cylinder_distances.py) are judged
    by coal; every other pair keeps MuJoCo's figure."""
    from rob_twin.models.names import group_arms

    model = load_robot_model("rob")
    with pytest.warns(UserWarning, match="capsule vs cylinder"):
        group = ArmGroup(model, group_arms())
    group.set_qpos(model.key("home").qpos)
    for moving in (("right",), ("right", "left")):
        geometry = _group_geometry(group, moving, 0.0)
        weak = [k for k, why in enumerate(geometry.weak_why) if why]
        assert weak and {geometry.weak_why[k] for k in weak} == {"capsule vs cylinder"}
        world = {f"table/leg{k}" for k in range(4)} | {"can/body"}
        for k in weak:
            pair = {_geom_name(model, geometry.g1[k]), _geom_name(model, geometry.g2[k])}
            assert len(pair & world) == 1, pair
        assert judge_for(group, geometry) is not None
