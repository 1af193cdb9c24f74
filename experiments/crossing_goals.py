"""ROB's crossing goal pair: the hands swap sides in front of the chest.

Shared by the ``crossing`` experiment (planner) and the ``sequential`` experiment
(executor). The frozen pair is data of the robot description (``rob_twin.models.poses``, with its
figures; its start is the model's ``crossing_start`` keyframe); ``rob_crossing_goals()``
returns it and ``search_crossing_goals()`` is the deterministic search that found it
(re-run it to reproduce the numbers there).

Search (seeded, joint space, bounded; ``search_crossing_goals``): per arm, uniform joint
states whose TCP is near the chest midline (|y| < 15 cm), in front (x > 0.2 m) at 0.6..1.3
m; starts drawn from these, goals where each hand takes the other's start place (the
hands swap sides), both pairs free by >= 10 mm; ranked by straight joint-line arm-arm
hits, the best few fully evaluated (``trap_figures``) and scored by the objective
``TrapFigures.score``: the fraction of frames in contact when each arm is planned alone
(a one-arm group on a model copy where the other arm cannot collide) and the two plans
run in sync, plus how far the group plan bends a TCP away from its alone path (/ 16 cm),
counted only when the group plan run one arm after the other also collides. (From home
the arms cannot swap sides: the right TCP reaches at most y = +0.12 m, so the start is
near the midline. The torso angle does not change the arm-against-arm geometry: both
arms ride on the torso, so it is left at home.)

Units: radians (joint goals), metres (TCP targets).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models import poses
from rob_twin.models.loading import CROSSING_START_KEY, HOME_KEY, keyframe_state
from rob_twin.models.names import group_arms

ARMS = group_arms()

CROSSING_START, CROSSING_GOALS = poses.CROSSING_START, poses.CROSSING_GOALS  # rob_twin.models.poses


def rob_home():
    """(scene model, home qpos): both arms at home (keyframe ``home``), base at the origin."""
    return keyframe_state(HOME_KEY)


def rob_crossing_goals() -> dict[str, np.ndarray]:
    """{"right": q, "left": q}: joint goals [rad] of the crossing pair (from
    ``rob_crossing_start()``)."""
    return {a: np.array(q) for a, q in CROSSING_GOALS.items()}


def rob_crossing_start() -> dict[str, np.ndarray]:
    """{"right": q, "left": q}: the start [rad] of the crossing pair."""
    return {a: np.array(q) for a, q in CROSSING_START.items()}


def crossing_start_qpos() -> tuple[mujoco.MjModel, np.ndarray]:
    """(scene model, full qpos): both arms at the crossing start (keyframe
    ``crossing_start``)."""
    return keyframe_state(CROSSING_START_KEY)


# ------------------------------------------------------------------------- search
@dataclass(frozen=True, kw_only=True)
class TrapFigures:
    """How strong a crossing pair is as a trap (all simulated).

    separate_colliding/separate_frames: frames where the two separately planned arms, run
    in sync, are in contact (coal, fresh model); detour_m: largest TCP distance of the
    group plan from its straight start-goal line; bend_m: largest distance of a group-plan
    TCP from the path the same arm takes when planned alone (how far the group bends it
    around the other); sequential_colliding/sequential_states: states of the group plan run
    one arm after the other (right, then left) that penetrate (the group's checker)."""

    separate_colliding: int
    separate_frames: int
    detour_m: float
    bend_m: float
    sequential_colliding: int
    sequential_states: int

    @property
    def score(self) -> float:
        """Objective: colliding fraction when planned separately + bend / 0.16 m (the seed's
        figures normalise both terms to about 1); 0 unless the pair is a trap both ways."""
        if self.separate_colliding == 0 or self.sequential_colliding == 0:
            return 0.0
        return self.separate_colliding / self.separate_frames + self.bend_m / 0.16


def trap_figures(model, start_qpos: np.ndarray, goals, seed: int = 0) -> TrapFigures | None:
    """TrapFigures of the pair (start: full qpos; goals: {arm: q}); None if the group
    cannot plan it."""
    from rob_twin.experiments.exp_crossing import (
        bend_from,
        max_detour,
        separate_sync_collisions,
        tcp_paths,
    )
    from rob_twin.planners.group import ArmGroup

    n_sep, frames, sep_states, _ = separate_sync_collisions(model, start_qpos, goals, seed)
    group = ArmGroup(model, ARMS)
    group.set_qpos(start_qpos)
    r = group.plan(goals, seed=seed)
    if not r.ok:
        return None
    states = group.full_qpos(r.plan)
    paths = tcp_paths(states, model)
    seq = sequential_states(group, r.plan)
    meter = group.meter.session(tuple(ARMS), group.reference_qpos)
    hits = sum(meter.clearance(q).distance_m < 0 for q in seq)
    return TrapFigures(
        separate_colliding=n_sep,
        separate_frames=frames,
        detour_m=max(max_detour(paths).values()),
        bend_m=max(bend_from(paths, tcp_paths(sep_states, model)).values()),
        sequential_colliding=int(hits),
        sequential_states=len(seq),
    )


def sequential_states(group, plan) -> np.ndarray:
    """Stacked (right, left) states of ``plan`` run one arm after the other: the right
    arm's whole trajectory with the left at its start, then the left's with the right at
    its goal."""
    r, left = plan.arms["right"].q, plan.arms["left"].q
    first = np.hstack([r, np.repeat(left[:1], len(r), axis=0)])
    second = np.hstack([np.repeat(r[-1:], len(left), axis=0), left])
    return np.vstack([first, second])


def _pool(group, kin, rng, draws: int) -> dict[str, list[np.ndarray]]:
    """Per arm: uniform joint states whose TCP is in front of the chest (x > 0.2 m),
    0.6..1.3 m up and within 15 cm of the midline, each arm free by >= 10 mm."""
    pool: dict[str, list[np.ndarray]] = {a: [] for a in ARMS}
    for _ in range(draws):
        for a in ARMS:
            lo, hi = group.joint_limits(a)
            q = np.round(rng.uniform(lo, hi), 4)
            p = kin[a].tcp_pose(q).translation
            if (
                abs(p[1]) < 0.15
                and p[0] > 0.2
                and 0.6 < p[2] < 1.3
                and group.clearance({a: q}).distance_m >= 0.01
            ):
                pool[a].append(q)
    return pool


def _arm_arm_hits(meter, states) -> int:
    """States where the arms penetrate each other (arm against arm, distance < 0)."""
    n = 0
    for q in states:
        c = meter.clearance(q)
        n += c.distance_m < 0 and c.pair.pair_class.name == "ARM_ARM"
    return n


def search_crossing_goals(
    seed: int = 1,
    draws: int = 150000,
    quads: int = 4000,
    finalists: int = 40,
    verbose: bool = False,
):
    """Bounded deterministic search for the strongest crossing trap (hands swap places).

    1. pool: ``draws`` uniform joint draws per arm (``_pool``);
    2. ``quads`` picks: a random start (right, left) from the pools where the right TCP is
       right of the left one and the pair is free by >= 10 mm; the goals put each hand
       where the other started: the right arm's pool state whose TCP is nearest the left
       start TCP and vice versa (kept when the hands swap sides and the goal pair is free
       by >= 10 mm). Ranked by the arm-against-arm penetrations of 40 straight joint-line
       states run in sync plus 2 x 40 run one arm after the other;
    3. the ``finalists`` best ranked are fully evaluated (``trap_figures``, planner seed 0);
       the best ``TrapFigures.score`` wins.

    Returns (start, goals, TrapFigures, [(pick, TrapFigures | None), ...]) or None.
    Takes a few minutes (not run by the tests)."""
    from rob_twin.planners.group import ArmGroup
    from rob_twin.planners.kinematics import ArmKinematics

    m, home = rob_home()
    group = ArmGroup(m, ARMS)
    group.set_qpos(home)
    kin = {a: ArmKinematics(a) for a in ARMS}
    rng = np.random.default_rng(seed)
    pool = _pool(group, kin, rng, draws)
    tcp = {a: np.array([kin[a].tcp_pose(q).translation for q in pool[a]]) for a in ARMS}
    meter = group.meter.session(tuple(ARMS), group.reference_qpos)
    fr = np.linspace(0.0, 1.0, 40)[:, None]
    ranked, seen = [], set()
    for n in range(quads):
        i, j = int(rng.integers(len(pool["right"]))), int(rng.integers(len(pool["left"])))
        k = int(np.argmin(np.linalg.norm(tcp["right"] - tcp["left"][j], axis=1)))
        l_ = int(np.argmin(np.linalg.norm(tcp["left"] - tcp["right"][i], axis=1)))
        if (i, j, k, l_) in seen or not (
            tcp["right"][i][1] < tcp["left"][j][1] and tcp["right"][k][1] > tcp["left"][l_][1]
        ):
            continue
        seen.add((i, j, k, l_))
        s = np.concatenate([pool["right"][i], pool["left"][j]])
        g = np.concatenate([pool["right"][k], pool["left"][l_]])
        if min(meter.clearance(s).distance_m, meter.clearance(g).distance_m) < 0.01:
            continue
        mid = np.concatenate([g[:7], s[7:]])  # right at its goal, left at its start
        hits = (
            _arm_arm_hits(meter, s + fr * (g - s))
            + _arm_arm_hits(meter, s + fr * (mid - s))
            + _arm_arm_hits(meter, mid + fr * (g - mid))
        )
        ranked.append((-hits, n, s, g))
    ranked.sort(key=lambda t: t[:2])
    best, evaluated = None, []
    for _, n, s, g in ranked[:finalists]:
        start = {"right": s[:7], "left": s[7:]}
        goals = {"right": g[:7], "left": g[7:]}
        sq = home.copy()
        for a in ARMS:
            sq[group.checker.arm_qpos[a]] = start[a]
        tf = trap_figures(m, sq, goals)
        evaluated.append((n, tf))
        if verbose:
            print(n, tf, tf and round(tf.score, 3), flush=True)
        if tf is not None and (best is None or tf.score > best[2].score):
            best = (start, goals, tf)
    return None if best is None else (*best, evaluated)
