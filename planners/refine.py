"""Refine stage of ``ArmGroup.plan``: retime the shortcut path, check every sample, certify
the plan between its samples, and slow or repair what fails, until the plan is certified.

Check (``rob_twin.planners.final_check``): every sample is either measured, all pairs'
distances up to the clearance horizon in one collision pass, or proven free from the last
measured state by each pair's Lipschitz bound; a measured state within the margin is a hit.
Certify (``rob_twin.planners.pair_certificate``): every pair's clearance between the measured
states is bounded, reusing the check's distances; a segment whose envelope stays inconclusive
is first slowed (``GroupConfig.slow_factor``, up to ``max_slowdowns`` per plan), else a plan
that cannot be certified at the margin is repaired like a hit, else the result is
``PlanStatus.UNCERTIFIED``: no plan is returned uncertified.

Repair (why it is reliable): shortcut waypoints are checked themselves (a waypoint within the
margin would make every later repair end at the same colliding state); a repair spans from the
nearest waypoint before the hit that is free to the nearest one after it, keeps the search
padding whenever the padded re-plan succeeds, re-plans at a finer edge step
(``repair_step_factor``) and shortcuts the re-planned span.

Units: radians, seconds, metres.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from rob_twin.planners import search
from rob_twin.planners.certificate_record import FAIL_INCONCLUSIVE, PlanClearanceCertificate
from rob_twin.planners.collision import CheckSession, Clearance
from rob_twin.planners.final_check import FinalCheck, final_check
from rob_twin.planners.pair_certificate import certify_timed
from rob_twin.planners.plan import PlanResult, PlanStatus
from rob_twin.planners.retime import JointLimits, TimedPath, time_path
from rob_twin.planners.timing import PlanClock

if TYPE_CHECKING:
    from rob_twin.planners.group import ArmGroup


@dataclass(frozen=True)
class Refined:
    """The certified outcome: the timed path, its final check (samples evaluated there), its
    certificate, and the counts of segment repairs, states colliding before the first repair
    and slowdowns."""

    timed: TimedPath
    check: FinalCheck
    certificate: PlanClearanceCertificate
    repairs: int
    colliding_before_repair: int
    slowdowns: int


def refine(
    group: ArmGroup,
    moving: tuple[str, ...],
    path: list[np.ndarray],
    sessions: tuple[CheckSession, CheckSession, CheckSession],
    rng: np.random.Generator,
    box: tuple[np.ndarray, np.ndarray],
    clock: PlanClock,
) -> Refined | PlanResult:
    """Retime, check, certify, slow and repair ``path`` (stages ``retime``, ``check``,
    ``certify``, ``search``) until it is certified; a failure or TIMEOUT comes back as a
    PlanResult. sessions: (padded, plain, meter) of the moving arms; box: the joint limits
    (lower, upper) [rad] of the stacked moving arms."""
    padded, plain, meter = sessions
    config = group.config
    timer, stages, deadline = clock.timer, clock.stages, clock.deadline
    limits = JointLimits.stack([group.motion_limits(a) for a in moving])
    stages["retime"] = stages["check"] = 0.0
    repairs = before = uncertified = slowdowns = 0
    timed = None
    while True:
        if timed is None:
            with timer.stage("retime"):
                timed = time_path(path, limits)
        with timer.stage("check"):
            fc = final_check(group, moving, timed, meter, deadline)
        if fc.measured < 0:
            return clock.timeout("check")
        hit = fc.hit
        if hit is None:
            with timer.stage("certify"):
                cert = certify_timed(
                    group,
                    moving,
                    timed,
                    config.certificate,
                    initial=fc.initial,
                    sampled=fc.sampled[:3],
                    session=meter,
                )
            if cert.certified:
                cert = replace(cert, uncertified_attempts=uncertified)
                return Refined(timed, fc, cert, repairs, before, slowdowns)
            uncertified += 1
            if (
                cert.fail_kind == FAIL_INCONCLUSIVE
                and slowdowns < config.max_slowdowns
                and cert.fail_time_s is not None
            ):  # a tighter speed bound may certify it: slow the segment, keep the path
                with timer.stage("retime"):
                    k = int(timed.segment_of(np.array([cert.fail_time_s]))[0])
                    timed = timed.slowed(k, config.slow_factor)
                slowdowns += 1
                continue
            if repairs >= config.max_repairs:
                return PlanResult(
                    PlanStatus.UNCERTIFIED,
                    reason=(
                        f"not certified ({cert.fail_kind}) after {repairs} segment repairs "
                        f"and {slowdowns} slowdowns: {cert.failure}"
                    ),
                    stage_times_s=stages,
                )
            hit = (cert.fail_time_s, Clearance(cert.certified_min_m, None))
        if repairs == 0:
            before = count_colliding(group, timed, plain, deadline)
            if before < 0:
                return clock.timeout("check")
        if repairs >= config.max_repairs:
            return PlanResult(
                PlanStatus.CHECK_FAILED,
                reason=(
                    f"retimed state at t={hit[0]:.3f} s still collides after {repairs} "
                    f"segment repairs: {hit[1]}"
                ),
                pair=hit[1].pair,
                stage_times_s=stages,
            )
        with timer.stage("search"):
            path = repair(group, timed, hit[0], (padded, plain), meter, rng, box, deadline)
        if clock.late():
            return clock.timeout("repair")
        repairs += 1
        timed = None
        if path is None:
            status = PlanStatus.CHECK_FAILED if hit[1].pair else PlanStatus.UNCERTIFIED
            return PlanResult(
                status,
                reason=(
                    f"retimed state at t={hit[0]:.3f} s collides or is not certified "
                    f"({hit[1]}) and its segment could not be re-planned"
                ),
                pair=hit[1].pair,
                stage_times_s=stages,
            )


def count_colliding(
    group: ArmGroup, timed: TimedPath, session: CheckSession, deadline: float | None = None
) -> int:
    """Retimed states (samples and sub-steps) of ``timed`` within the margin, counted
    with ``session`` (a margin check: the plain checker's is the cheapest); -1 when
    ``deadline`` (``time.perf_counter()``) passed first (looked at every 32 states)."""
    q, _, _ = timed.evaluate(group._dense_times(timed.duration))
    n = 0
    for i, row in enumerate(q):
        if deadline is not None and i % 32 == 0 and time.perf_counter() > deadline:
            return -1
        n += not session.is_free(row)
    return n


def repair(
    group: ArmGroup,
    timed: TimedPath,
    t_hit: float,
    sessions,
    meter: CheckSession,
    rng,
    box,
    deadline: float | None = None,
):
    """Re-plan the span around the segment that holds ``t_hit`` at a finer edge step.

    The span runs from the nearest waypoint at or before the segment that is free at the
    margin to the nearest such waypoint at or after it (the ends of the path are free:
    checked before the search). The padded session is tried first, then the plain
    one; the re-planned span is shortcut with the session that found it. None when no
    session finds a span (or the deadline passed).
    """
    config = group.config
    margin = config.collision.margin_m
    pts = list(timed.waypoints)
    k = int(timed.segment_of(np.array([t_hit]))[0])
    lo, hi = k, k + 1
    while lo > 0 and not meter.clearance(pts[lo]).is_free(margin):
        lo -= 1
    while hi < len(pts) - 1 and not meter.clearance(pts[hi]).is_free(margin):
        hi += 1
    step = config.search.edge_step_rad * config.repair_step_factor
    fine = replace(config.search, edge_step_rad=step)
    for session in sessions:
        prove = session.prove_free if config.free_filter else None
        found = search.rrt_connect(
            pts[lo],
            pts[hi],
            box[0],
            box[1],
            session.is_free,
            rng,
            fine,
            try_direct=False,
            deadline_s=deadline,
            prove_free=prove,
        )
        if found.path is not None:
            span = search.shortcut(
                found.path,
                session.is_free,
                rng,
                config.search.shortcut_rounds // 2,
                step,
                deadline_s=deadline,
                min_gain=config.search.shortcut_min_gain,
                drop_first=config.search.shortcut_drop_first,
                prove_free=prove,
            )
            return pts[:lo] + span + pts[hi + 1 :]
        if found.timed_out:
            return None
    return None
