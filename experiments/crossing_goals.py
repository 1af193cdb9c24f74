"""ROB's crossing goal pair: the hands swap sides in front of the chest.

Shared by the ``crossing`` experiment (planner) and the ``sequential`` experiment
(executor). ``rob_crossing_goals()`` returns the frozen pair; ``search_crossing_goals()``
is the deterministic search that found it (re-run it to reproduce the numbers below).

Search (seeded, joint space): per arm, uniform joint states in the limits whose TCP is
near the chest midline (|y| < 12 cm), in front (x > 0.25 m) at chest height (0.7..1.2 m);
start and goal pairs from these where the hands swap sides (right TCP right of the left
one at the start, left of it at the goal), both pairs free (>= 10 mm), straight joint
lines in sync hit arm against arm, and it is a *real trap*: each arm planned alone (a
one-arm group on a model copy where the other arm cannot collide), the two plans run
together in sync collide. The first such pair is frozen here. (From home the arms cannot
swap sides: the right TCP reaches at most y = +0.12 m, so the start is near the midline.)

Units: radians (joint goals), metres (TCP targets).
"""

from __future__ import annotations

import itertools

import mujoco
import numpy as np

from controllers.names import Arm, arm_joints
from twin.model.loading import apply_home, load_scene

ARMS = {"right": list(arm_joints(Arm.RIGHT)), "left": list(arm_joints(Arm.LEFT))}

# Found by search_crossing_goals(seed=0) (its first hit), rounded to 1e-4 rad.
# The hands start near the chest midline (right hand right of the left one) and swap sides.
CROSSING_START = {"right": (0.7967, -1.307, -0.7679, 1.8196, -1.4691, -0.0982, 0.3716),
                  "left": (-0.9457, 1.0976, 1.2898, 1.9848, -0.4721, 0.0063, -0.3448)}
CROSSING_GOALS = {"right": (1.622, -1.2873, -0.9808, 1.7561, -0.1692, 0.6287, -0.3535),
                  "left": (-1.1194, 1.2905, 1.2289, 1.534, -0.3899, -0.3571, 0.1828)}


def rob_home():
    """(scene model, home qpos): both arms at home, base at the origin."""
    m = load_scene()
    d = mujoco.MjData(m)
    apply_home(m, d)
    return m, d.qpos.copy()


def rob_crossing_goals() -> dict[str, np.ndarray]:
    """{"right": q, "left": q}: joint goals [rad] of the crossing pair (from
    ``rob_crossing_start()``)."""
    return {a: np.array(q) for a, q in CROSSING_GOALS.items()}


def rob_crossing_start() -> dict[str, np.ndarray]:
    """{"right": q, "left": q}: the start [rad] of the crossing pair."""
    return {a: np.array(q) for a, q in CROSSING_START.items()}


def crossing_start_qpos() -> tuple[mujoco.MjModel, np.ndarray]:
    """(scene model, full qpos): home with both arms at the crossing start."""
    m, qpos = rob_home()
    for a, q in rob_crossing_start().items():
        qpos[[m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)]
              for j in ARMS[a]]] = q
    return m, qpos


def search_crossing_goals(seed: int = 0, max_draws: int = 20000, max_pairs: int = 400,
                          verbose: bool = False):
    """Deterministic seeded search in joint space; returns (start, goals, colliding, frames)."""
    from experiments.exp_crossing import separate_sync_collisions
    from planners.group import ArmGroup
    from planners.kinematics import ArmKinematics

    m, home = rob_home()
    group = ArmGroup(m, ARMS)
    group.set_qpos(home)
    kin = {a: ArmKinematics(a) for a in ARMS}
    rng = np.random.default_rng(seed)
    pool: dict[str, list[np.ndarray]] = {a: [] for a in ARMS}
    for _ in range(max_draws):  # per arm: joint states with the TCP near the midline, in front
        for a in ARMS:
            lo, hi = group.joint_limits(a)
            q = np.round(rng.uniform(lo, hi), 4)
            p = kin[a].tcp_pose(q).translation
            if abs(p[1]) < 0.12 and p[0] > 0.25 and 0.7 < p[2] < 1.2 and \
                    group.clearance({a: q}).distance_m >= 0.01:
                pool[a].append(q)
    n = min(len(pool["right"]), len(pool["left"]))
    tried = 0
    for i, k in itertools.product(range(n), range(n)):
        start = {"right": pool["right"][i], "left": pool["left"][i]}
        goals = {"right": pool["right"][k], "left": pool["left"][k]}
        if i == k or tried >= max_pairs:
            continue
        # the hands must swap sides (right TCP from the right of the left TCP to its left)
        y = {(w, a): kin[a].tcp_pose(d[a]).translation[1] for w, d in (("s", start), ("g", goals))
             for a in ARMS}
        if not (y["s", "right"] < y["s", "left"] and y["g", "right"] > y["g", "left"]):
            continue
        if min(group.clearance(start).distance_m, group.clearance(goals).distance_m) < 0.01:
            continue
        tried += 1
        fr = np.linspace(0.0, 1.0, 40)  # cheap pre-filter: straight lines in sync hit arm vs arm
        hits = [group.clearance({a: start[a] + f * (goals[a] - start[a]) for a in ARMS})
                for f in fr]
        if not any(c.distance_m < 0 and c.pair.pair_class.name == "ARM_ARM" for c in hits):
            continue
        sq = home.copy()
        for a in ARMS:
            sq[group.checker.arm_qpos[a]] = start[a]
        colliding, frames, _ = separate_sync_collisions(m, sq, goals)
        if verbose:
            print({a: q.tolist() for a, q in start.items()}, {a: q.tolist() for a, q in
                                                              goals.items()}, colliding, frames)
        if colliding > 0:
            return start, goals, colliding, frames
    return None
