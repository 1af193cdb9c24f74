"""The faults experiment: the owner's fault matrix (simulated, hardware_io false).

Lockstep on a SimClock with idealized feedback unless a case injects a fault.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from rob_twin.controllers.mailbox import RejectReason
from rob_twin.controllers.owner_config import LateTickAction, default_config
from rob_twin.controllers.owner_types import FaultKind, Mode
from rob_twin.controllers.publish import PublishOutcome
from rob_twin.experiments.output import markdown_table, write_experiment
from rob_twin.experiments.owner_rig import Rig, experiment_rig, held_tick_stop_race
from rob_twin.experiments.registry import experiment


def _moving_rig(config=None) -> Rig:
    rig = experiment_rig(config)
    rig.submit(0.6)
    rig.step(100)
    return rig


def _after(rig: Rig, n: int = 100):
    before = len(rig.pub.samples)
    reps = rig.step(n)
    return reps, len(rig.pub.samples) - before


def _latched(name, injected, rig, inject, expect: FaultKind):
    inject(rig)
    handed = []  # publisher calls so far, after each tick
    latched_at = None
    for _ in range(100):
        rep = rig.step(1)[0]
        handed.append(len(rig.pub.samples))
        if rep.fault is not None and latched_at is None:
            latched_at = len(handed) - 1
    fault = rig.owner.fault
    # frames handed to the bus after the tick that latched the fault (must be 0)
    after = handed[-1] - handed[latched_at] if latched_at is not None else -1
    return {
        "case": name,
        "injected": injected,
        "outcome": f"fault {fault.value if fault else None}",
        "as_expected": fault is expect and after == 0,
        "frames_after": after,
        "ticks_to_latch": None if latched_at is None else latched_at + 1,
    }


def _stop_race() -> dict:
    log = held_tick_stop_race(experiment_rig(), first_target=0.6, warmup_ticks=100, ticks_after=300)
    rig = log.rig
    computed, published = log.flags("computed"), log.flags("published")
    stale = sum(1 for c, p in zip(computed, published, strict=False) if p and not c)
    return {
        "case": "stop/publication race",
        "injected": "stop() while a computed sample is held before publish",
        "outcome": f"mode {rig.owner.mode.value}; in-flight sample published before stop returned",
        "as_expected": rig.owner.mode is Mode.STOPPED and stale == 0,
        "frames_after": stale,
        "brake_frames_computed_after_stop": sum(published),
    }


def _reject(name, injected, make, expect: RejectReason) -> dict:
    rig = _moving_rig()
    res = rig.owner.submit(make(rig))
    reps, _ = _after(rig, 20)
    return {
        "case": name,
        "injected": injected,
        "outcome": f"rejected {res.reason.value if res.reason else None}",
        "as_expected": res.reason is expect and not any(r.new_plan for r in reps),
        "frames_after": sum(r.new_plan for r in reps),
    }


def _brake(name, injected, inject, expect_mode: Mode, config=None) -> dict:
    """frames_after: samples published after the event that still tracked the old plan
    (published in mode TRACKING) instead of braking; counted from the tick reports."""
    rig = _moving_rig(config)
    inject(rig)
    reps, n = _after(rig, 300)
    a = np.array([r.accelerations_rad_s2 for r in reps])
    tracking_after = sum(1 for r in reps if r.published and r.mode is Mode.TRACKING)
    ok = rig.owner.mode is expect_mode and np.abs(a).max() <= 0.6 + 1e-9 and tracking_after == 0
    return {
        "case": name,
        "injected": injected,
        "outcome": f"braked to {rig.owner.mode.value}",
        "as_expected": bool(ok),
        "frames_after": tracking_after,
        "brake_frames_computed_after_event": n,
    }


@experiment("faults")
def faults(seed: int = 0) -> dict:
    """Fault matrix: frames_after counts stale frames (computed before the event) reaching the
    bus after a stop, any frame after a latched fault, any new plan after a rejected target,
    and any frame still tracking the old plan after a brake event; all must be 0."""
    cfg = default_config()
    rows = [_stop_race()]
    rows.append(
        _reject(
            "sequence replay",
            "resubmit an already accepted sequence",
            lambda r: r.target(0.1, seq=r.seq),
            RejectReason.STALE_SEQUENCE,
        )
    )
    rows.append(
        _reject(
            "foreign generation",
            "target of generation + 7",
            lambda r: r.target(0.1, generation=r.owner.generation + 7),
            RejectReason.FOREIGN_GENERATION,
        )
    )
    rows.append(
        _latched(
            "stale tracking",
            "feedback 0.2 rad off the commanded sample",
            _moving_rig(),
            lambda r: setattr(r, "fb_offset", np.full(7, 0.2)),
            FaultKind.TRACKING_ERROR,
        )
    )
    rows.append(
        _latched(
            "stale feedback",
            "feedback stops arriving",
            _moving_rig(),
            lambda r: setattr(r, "feedback", False),
            FaultKind.STALE_FEEDBACK,
        )
    )
    rows.append(
        _brake(
            "loss of authority",
            "lease revoked mid-motion",
            lambda r: r.owner.revoke_authority(),
            Mode.HOLD,
        )
    )
    rows.append(
        _brake(
            "timing gap (brake)",
            "5-period tick gap",
            lambda r: r.clock.advance(4 * cfg.period_s),
            Mode.HOLD,
        )
    )
    rows.append(
        _latched(
            "timing gap (fault)",
            "5-period tick gap, late_tick_action=fault",
            _moving_rig(replace(cfg, late_tick_action=LateTickAction.FAULT)),
            lambda r: r.clock.advance(4 * cfg.period_s),
            FaultKind.LATE_TICK,
        )
    )

    def blocked(r):
        r.owner.stop()
        r.pub.default = PublishOutcome.REFUSED

    rows.append(
        _latched(
            "blocked braking path",
            "publisher refuses every sample during the brake",
            _moving_rig(),
            blocked,
            FaultKind.BLOCKED_BRAKING_PATH,
        )
    )
    for outcome, kind in (
        (PublishOutcome.UNCERTAIN, FaultKind.UNCERTAIN_OUTPUT),
        (PublishOutcome.PARTIAL, FaultKind.PARTIAL_OUTPUT),
    ):
        name = "uncertain output" if outcome is PublishOutcome.UNCERTAIN else "partial batch"
        rows.append(
            _latched(
                name,
                f"one {outcome.value} publish report",
                _moving_rig(),
                lambda r, o=outcome: r.pub.script.append(o),
                kind,
            )
        )
    result = {
        "experiment": "faults",
        "cases": rows,
        "all_as_expected": all(r["as_expected"] for r in rows),
        "max_frames_after": max(r["frames_after"] for r in rows),
    }
    return write_experiment(
        "faults",
        result,
        markdown_table(rows, ["case", "injected", "outcome", "as_expected", "frames_after"]),
    )
