"""Hard dual-arm planning problems: the straight joint motion collides.

A problem is a start and a goal joint vector for each of two arms, both ends at least
``MIN_END_CLEARANCE_M`` free (the pair together), while the straight joint-space
interpolation between them comes within the planner's margin somewhere. Four kinds, each
drawn by a seeded rejection search with its own acceptance rule on the arms' hand points
(the body of each arm's last joint, world frame):

- ``reach_across``: a goal among the pool's ``INWARD_QUANTILE`` configurations whose
  innermost hand is nearest the midplane between the arms, from a start among the
  outer half: a hand reaches over towards the other arm. ROB's hands cannot cross: over
  3,000 uniform samples of both arms neither
  hand passed the midplane and they never came closer than 26 cm (hand = body of the
  arm's last joint), so "hands crossing" means reaching towards each other there;
- ``hands_close``: a goal among the pool's ``INWARD_QUANTILE`` configurations with the
  hands closest together;
- ``parked``: one arm stays where it is (its goal is its start) and the other's straight
  motion runs into it;
- ``around``: any other straight motion that collides (reaching around or under the
  other arm, or through the robot's own body).

``generate`` is the search; the problems the benchmark and the ``study`` experiment use
are frozen as JSON under ``experiments/data/`` (``load``), so a change of sampling code
never silently changes the figures. ``python -m rob_twin.experiments.hard_problems`` rewrites them.

Units: radians, metres.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.names import ROB
from rob_twin.planners.collision import CheckSession
from rob_twin.planners.group import ArmGroup

DATA_DIR = Path(__file__).parent / "data"
KINDS = ("reach_across", "hands_close", "parked", "around")
INWARD_QUANTILE = 0.05  # the pool's innermost / closest-hands fraction used as goals
MIN_END_CLEARANCE_M = 0.01
STRAIGHT_STEP_RAD = 0.01  # resolution of the straight-motion collision test [rad]


@dataclass(frozen=True)
class HardProblem:
    """kind: one of ``KINDS``; start/goal: arm -> joint vector [rad]."""

    kind: str
    start: dict[str, np.ndarray]
    goal: dict[str, np.ndarray]

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "start": {a: q.tolist() for a, q in self.start.items()},
            "goal": {a: q.tolist() for a, q in self.goal.items()},
        }

    @classmethod
    def from_dict(cls, d: dict) -> HardProblem:
        return cls(
            d["kind"],
            {a: np.array(q, float) for a, q in d["start"].items()},
            {a: np.array(q, float) for a, q in d["goal"].items()},
        )


def straight_collides(
    session: CheckSession, start: np.ndarray, goal: np.ndarray, step_rad: float = STRAIGHT_STEP_RAD
) -> bool:
    """True when a state of the straight motion (every ``step_rad`` per joint) is not free."""
    n = max(1, int(np.ceil(np.max(np.abs(goal - start)) / step_rad)))
    return any(not session.is_free(start + (goal - start) * (k / n)) for k in range(1, n))


class _Hands:
    """World positions of each arm's last body for stacked configurations."""

    def __init__(self, group: ArmGroup, moving: tuple[str, ...]):
        m = group.model
        self.m, self.d = m, mujoco.MjData(m)
        self.index = np.concatenate([group.checker.arm_qpos[a] for a in moving])
        self.bodies = [
            int(
                m.jnt_bodyid[
                    mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, group.joint_names(a)[-1])
                ]
            )
            for a in moving
        ]
        self.reference = group.reference_qpos.copy()

    def __call__(self, q: np.ndarray) -> np.ndarray:
        self.d.qpos[:] = self.reference
        self.d.qpos[self.index] = q
        mujoco.mj_kinematics(self.m, self.d)
        return self.d.xpos[self.bodies].copy()


def generate(
    group: ArmGroup,
    per_kind: int,
    seed: int,
    pool_size: int = 1500,
    min_clearance_m: float = MIN_END_CLEARANCE_M,
) -> list[HardProblem]:
    """``per_kind`` problems of each kind by seeded rejection sampling: a pool of
    ``pool_size`` free configurations of both arms (uniform within the limits; the group's
    reference holds everything else), then random start/goal pairs from the pool (for
    ``parked``, the goal takes one arm from another pool entry) kept by the kind's rule."""
    moving = tuple(group.arm_names)
    if len(moving) != 2:
        raise ValueError(f"hard problems need a two-arm group, got arms {moving}")
    rng = np.random.default_rng(seed)
    session = group.checker.session(moving, group.reference_qpos)
    meter = group.meter.session(moving, group.reference_qpos)
    hands = _Hands(group, moving)
    sizes = [len(group.joint_names(a)) for a in moving]
    lo = np.concatenate([group.joint_limits(a)[0] for a in moving])
    hi = np.concatenate([group.joint_limits(a)[1] for a in moving])
    h0 = hands(np.concatenate([group.arm_q(a) for a in moving]))
    side = h0[1] - h0[0]  # from the first arm's hand to the second's, at the reference
    side /= np.linalg.norm(side)
    mid = 0.5 * (h0[0] + h0[1])

    def free(q: np.ndarray) -> bool:
        return meter.clearance(q).distance_m >= min_clearance_m

    pool: list[np.ndarray] = []
    while len(pool) < pool_size:
        q = rng.uniform(lo, hi)
        if free(q):
            pool.append(q)
    pool_hands = [hands(q) for q in pool]
    out_of_mid = np.array([min((mid - h[0]) @ side, (h[1] - mid) @ side) for h in pool_hands])
    apart = np.array([np.linalg.norm(h[1] - h[0]) for h in pool_hands])
    goal_ok = {
        "reach_across": out_of_mid <= np.quantile(out_of_mid, INWARD_QUANTILE),
        "hands_close": apart <= np.quantile(apart, INWARD_QUANTILE),
        "parked": np.ones(pool_size, bool),
        "around": np.ones(pool_size, bool),
    }
    start_ok = {"reach_across": out_of_mid >= np.quantile(out_of_mid, 0.5)}

    out: list[HardProblem] = []
    for kind in KINDS:
        goals = np.flatnonzero(goal_ok[kind])
        starts = np.flatnonzero(start_ok.get(kind, np.ones(pool_size, bool)))
        if goals.size == 0 or starts.size == 0:
            raise ValueError(f"no pool configuration fits kind {kind!r}; raise pool_size")
        got = 0
        for _ in range(500 * per_kind):
            if got == per_kind:
                break
            i, j = int(rng.choice(starts)), int(rng.choice(goals))
            if i == j:
                continue
            qs, qg = pool[i], pool[j].copy()
            if kind == "parked":
                sl = slice(0, sizes[0]) if rng.integers(2) == 0 else slice(sizes[0], None)
                qg[sl] = qs[sl]
                if not free(qg):
                    continue
            if not straight_collides(session, qs, qg):
                continue
            split = np.split(qs, [sizes[0]]), np.split(qg, [sizes[0]])
            out.append(
                HardProblem(
                    kind,
                    dict(zip(moving, split[0], strict=True)),
                    dict(zip(moving, split[1], strict=True)),
                )
            )
            got += 1
        print(f"[hard problems] {kind}: {got}/{per_kind}", file=sys.stderr, flush=True)
    return out


def place_start(group: ArmGroup, reference: np.ndarray, start: dict | None) -> None:
    """Put ``group`` at ``reference`` (full qpos) with the arms of ``start`` (arm -> joint
    vector [rad], None: none) set: where a request of a set is planned from."""
    group.set_qpos(reference)
    for a, q in (start or {}).items():
        group.set_arm(a, q)


def save(problems: list[HardProblem], name: str, note: str) -> Path:
    path = DATA_DIR / f"hard_problems_{name}.json"
    path.write_text(
        json.dumps({"note": note, "problems": [p.as_dict() for p in problems]}, indent=1)
    )
    return path


def load(name: str) -> list[HardProblem]:
    """The frozen problems ``name`` (``rob`` or ``stand``)."""
    data = json.loads((DATA_DIR / f"hard_problems_{name}.json").read_text())
    return [HardProblem.from_dict(d) for d in data["problems"]]


def groups() -> dict[str, ArmGroup]:
    """The two models of the hard set, each as a group at its reference: ROB at home
    (``rob``) and the two-arm stand of the tests (``stand``)."""
    from rob_twin.models.loading import keyframe_state
    from rob_twin.models.names import group_arms

    m, home = keyframe_state()
    rob = ArmGroup(m, group_arms())
    rob.set_qpos(home)
    stand_model = mujoco.MjModel.from_xml_path(str(STAND_PATH))
    stand = ArmGroup(stand_model, STAND_ARMS)
    return {ROB: rob, "stand": stand}


STAND_PATH = Path(__file__).parent.parent / "tests" / "models" / "two_arm_stand.xml"
STAND_ARMS = {a: [f"{a}/yaw", f"{a}/shoulder", f"{a}/elbow", f"{a}/wrist"] for a in ("a", "b")}
PER_KIND = 8
SEEDS = {ROB: 19, "stand": 20}


def main() -> int:
    for name, group in groups().items():
        problems = generate(group, PER_KIND, SEEDS[name])
        path = save(
            problems,
            name,
            f"rob_twin.experiments.hard_problems.generate(per_kind={PER_KIND}, "
            f"seed={SEEDS[name]}): uniform start and goal within the "
            f"limits, ends >= {MIN_END_CLEARANCE_M} m free, straight "
            f"motion (every {STRAIGHT_STEP_RAD} rad) within the margin",
        )
        print(f"{len(problems)} problems -> {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
