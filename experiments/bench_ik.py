"""Benchmark ``ik``: IK success, accuracy and speed per arm; FK/Jacobian/RNEA call times.

1. Random: 1,000 reachable poses per arm (FK of uniform in-limit joint vectors, uniform
   torso angles), solved without a seed (random restarts). Every solution's errors are
   re-measured with MuJoCo's site FK (an independent oracle), not only the solver's own.
2. Continuity: 1,000 samples at 125 Hz of a smooth TCP path (FK of a smooth joint
   trajectory with a turning torso), each solved by ``solve_continuous`` seeded with the
   previous solution; joint-step bound = each motor's no-load speed x one period.
3. Goal sets: 100 poses per arm, 4 distinct solutions requested.
4. Call times [us] of the public API (input validation included) and of the raw
   Pinocchio calls underneath.

Targets: success >= 99.5 %, errors <= 1e-6 m and 1e-6 rad. Simulated figures.
"""

from __future__ import annotations

import time

import mujoco
import numpy as np
import pinocchio as pin
from rob_twin.experiments.registry import benchmark
from rob_twin.models import names as N
from rob_twin.models.loading import ROBOT_PATH, arm_qpos_indices, joint_qpos_index
from rob_twin.models.names import Arm
from rob_twin.planners.ik import IKSolver, default_config
from rob_twin.planners.kinematics import ArmKinematics, Payload
from rob_twin.planners.pose import pose_error

N_RANDOM = 1000
N_PATH = 1000
N_GOAL_SETS = 100
RATE_HZ = 125.0


class _MjFK:
    """MuJoCo TCP pose of one arm with the base at identity (the independent oracle)."""

    def __init__(self, arm: Arm):
        self.m = mujoco.MjModel.from_xml_path(str(ROBOT_PATH))
        self.d = mujoco.MjData(self.m)
        self.idx = arm_qpos_indices(self.m, arm)
        self.torso = joint_qpos_index(self.m, N.TORSO_JOINT)
        self.site = self.m.site(N.tcp_site(arm)).id

    def pose(self, q, torso) -> pin.SE3:
        self.d.qpos[:] = 0.0
        self.d.qpos[3] = 1.0
        self.d.qpos[self.idx] = q
        self.d.qpos[self.torso] = torso
        mujoco.mj_kinematics(self.m, self.d)
        return pin.SE3(
            self.d.site_xmat[self.site].reshape(3, 3).copy(), self.d.site_xpos[self.site].copy()
        )


def _ms(times_s: list[float]) -> dict:
    ms = np.asarray(times_s) * 1e3
    return {
        "median": round(float(np.median(ms)), 4),
        "p95": round(float(np.percentile(ms, 95)), 4),
        "p99": round(float(np.percentile(ms, 99)), 4),
        "max": round(float(np.max(ms)), 4),
    }


def _summary(results, targets, torsos, oracle: _MjFK) -> dict:
    ok = [r.ok for r in results]
    pos, rot, mj_pos, mj_rot = [0.0], [0.0], [0.0], [0.0]
    for r, target, torso in zip(results, targets, torsos, strict=True):
        if r.ok:
            pos.append(r.solutions[0].position_error_m)
            rot.append(r.solutions[0].orientation_error_rad)
            dp, dr = pose_error(oracle.pose(r.q, torso), target)
            mj_pos.append(dp)
            mj_rot.append(dr)
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    return {
        "n": len(results),
        "success_rate": float(np.mean(ok)),
        "failures": int(len(ok) - sum(ok)),
        "statuses": statuses,
        "max_position_error_m": max(pos),
        "max_orientation_error_rad": max(rot),
        "mujoco_max_position_error_m": max(mj_pos),
        "mujoco_max_orientation_error_rad": max(mj_rot),
        "solve_ms": _ms([r.solve_time_s for r in results]),
        "attempts_mean": round(float(np.mean([r.attempts for r in results])), 3),
        "attempts_max": int(max(r.attempts for r in results)),
    }


def _random(solver: IKSolver, oracle: _MjFK, seed: int) -> dict:
    kin, rng = solver.kin, np.random.default_rng(seed)
    targets, torsos, results = [], [], []
    for _ in range(N_RANDOM):
        torso = rng.uniform(*kin.torso_range)
        target = kin.tcp_pose(rng.uniform(kin.lower, kin.upper), torso)
        targets.append(target)
        torsos.append(torso)
        results.append(solver.solve(target, torso))
    return _summary(results, targets, torsos, oracle)


def _continuity(solver: IKSolver, oracle: _MjFK) -> dict:
    kin = solver.kin
    t = np.arange(N_PATH) / RATE_HZ
    mid = np.array([0.8, -0.5, 0.2, 1.3, 0.1, 0.1, -0.2])
    amp = np.array([0.5, 0.35, 0.6, 0.5, 0.7, 0.4, 0.8])
    freq = np.array([0.11, 0.17, 0.13, 0.19, 0.23, 0.29, 0.31])  # [Hz]
    path = mid + amp * np.sin(2 * np.pi * freq * t[:, None])
    torsos = 0.6 * np.sin(2 * np.pi * 0.05 * t)
    bound = kin.velocity_limit / RATE_HZ  # a step no motor could make in one period is refused
    targets = [kin.tcp_pose(q, a) for q, a in zip(path, torsos, strict=True)]
    q, results, steps = path[0].copy(), [], [0.0]
    ratios, drift, min_sv = [0.0], [0.0], np.inf
    for i, (target, torso) in enumerate(zip(targets, torsos, strict=True)):
        res = solver.solve_continuous(target, q, torso, max_joint_step=bound)
        results.append(res)
        if res.ok:
            steps.append(res.solutions[0].max_joint_step_rad)
            if i > 0:  # joint motion of the IK vs the generating path's own step (L2)
                ratios.append(np.linalg.norm(res.q - q) / np.linalg.norm(path[i] - path[i - 1]))
            drift.append(float(np.max(np.abs(res.q - path[i]))))
            min_sv = min(
                min_sv, np.linalg.svd(kin.tcp_jacobian(res.q, torso), compute_uv=False)[-1]
            )
            q = res.q
    out = _summary(results, targets, list(torsos), oracle)
    out.update(
        rate_hz=RATE_HZ,
        duration_s=float(N_PATH / RATE_HZ),
        tcp_path_length_m=float(
            sum(
                np.linalg.norm(b.translation - a.translation)
                for a, b in zip(targets[:-1], targets[1:], strict=True)
            )
        ),
        joint_step_bound_rad=bound.round(5).tolist(),
        max_joint_step_rad=max(steps),
        # Redundancy: the IK follows the nearest solution, not the generating joint path.
        max_step_ratio_vs_generating_path=float(max(ratios)),
        max_deviation_from_generating_path_rad=max(drift),
        min_jacobian_singular_value=float(min_sv),
        generating_path_min_jacobian_singular_value=float(
            min(
                np.linalg.svd(kin.tcp_jacobian(q, a), compute_uv=False)[-1]
                for q, a in zip(path, torsos, strict=True)
            )
        ),
    )
    return out


def _goal_sets(solver: IKSolver, seed: int) -> dict:
    kin, rng = solver.kin, np.random.default_rng(seed)
    counts, times = [], []
    for _ in range(N_GOAL_SETS):
        torso = rng.uniform(*kin.torso_range)
        res = solver.solve(
            kin.tcp_pose(rng.uniform(kin.lower, kin.upper), torso), torso, n_solutions=4
        )
        counts.append(len(res.solutions))
        times.append(res.solve_time_s)
    return {
        "n": N_GOAL_SETS,
        "requested": 4,
        "complete_rate": float(np.mean(np.array(counts) == 4)),
        "mean_solutions": float(np.mean(counts)),
        "solve_ms": _ms(times),
    }


def _per_call_us(fn, n: int = 20000) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return round((time.perf_counter() - t0) / n * 1e6, 3)


def _timings(kin: ArmKinematics) -> dict:
    q, torso = np.array([0.4, -0.6, 0.3, 1.2, -0.2, 0.3, 0.5]), 0.2
    q8 = kin.full_q(q, torso)
    m, d, f = kin.model, kin.data, kin.tcp_frame
    payload = Payload(1.0)
    return {
        "fk_us": _per_call_us(lambda: kin.tcp_pose(q, torso)),
        "jacobian_us": _per_call_us(lambda: kin.tcp_jacobian(q, torso)),
        "rnea_gravity_us": _per_call_us(lambda: kin.gravity_torques(q, torso)),
        "rnea_gravity_payload_us": _per_call_us(lambda: kin.gravity_torques(q, torso, payload)),
        "pinocchio_fk_us": _per_call_us(lambda: pin.framesForwardKinematics(m, d, q8)),
        "pinocchio_jacobian_us": _per_call_us(
            lambda: pin.computeFrameJacobian(m, d, q8, f, pin.LOCAL_WORLD_ALIGNED)
        ),
        "pinocchio_rnea_us": _per_call_us(lambda: pin.rnea(m, d, q8, np.zeros(8), np.zeros(8))),
    }


@benchmark("ik")
def run() -> dict:
    cfg = default_config()
    arms, all_random = {}, []
    for i, arm in enumerate(Arm):
        kin = ArmKinematics(arm)
        oracle = _MjFK(arm)
        random = _random(IKSolver(kin, cfg), oracle, seed=100 + i)
        all_random.append(random)
        arms[arm.value] = {
            "random": random,
            "continuity": _continuity(IKSolver(kin, cfg), oracle),
            "goal_sets": _goal_sets(IKSolver(kin, cfg), seed=200 + i),
            "timings_us": _timings(kin),
        }
    both_n = sum(r["n"] for r in all_random)
    return {
        "success_rate": sum(r["success_rate"] * r["n"] for r in all_random) / both_n,
        "max_position_error_m": max(r["max_position_error_m"] for r in all_random),
        "max_orientation_error_rad": max(r["max_orientation_error_rad"] for r in all_random),
        "solve_ms_median_worst_arm": max(r["solve_ms"]["median"] for r in all_random),
        "arms": arms,
        "targets": {"success_rate": 0.995, "position_error_m": 1e-6, "orientation_error_rad": 1e-6},
        "config": {
            "position_tolerance_m": cfg.position_tolerance_m,
            "orientation_tolerance_rad": cfg.orientation_tolerance_rad,
            "max_attempts": cfg.max_attempts,
            "lm_tolerance": cfg.lm.tolerance,
            "lm_max_iterations": cfg.lm.max_iterations,
        },
        "setup": "Pinocchio model of ROB's assumed dimensions; timings on this machine's CPU",
    }
