"""Seed 000 reproductions for the ContinuousArm owner (all simulated, hardware_io false).

inconsistent-seed, replay, rates, faults, legacy-race. Every run is lockstep on a
SimClock with idealized feedback (the previous output) unless a case injects a fault.
"""

from __future__ import annotations

import math
import threading
from dataclasses import replace

import numpy as np
import ruckig
from ruckig import InputParameter, OutputParameter, Result, Ruckig, Trajectory

from controllers.clock import SimClock
from controllers.extremum import segment_extrema, segments_from_trajectory
from controllers.mailbox import RejectReason
from controllers.names import Arm
from controllers.owner import (
    ArmOwner,
    FaultKind,
    LateTickAction,
    Mode,
    OwnerConfig,
    OwnerHooks,
    default_config,
)
from controllers.publish import PublishOutcome, PublishReport
from controllers.target import ArmTarget
from experiments.legacy_host import LegacyHooks, LegacyHost
from experiments.output import markdown_table, write_experiment
from experiments.registry import experiment

# ---------------------------------------------------------------------------- rig


class Recorder:
    """A recording publisher with a scripted outcome queue (simulated bus)."""

    def __init__(self) -> None:
        self.samples: list[np.ndarray] = []
        self.script: list[PublishOutcome] = []
        self.default = PublishOutcome.ACCEPTED
        self.on_publish = None

    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        out = self.script.pop(0) if self.script else self.default
        self.samples.append(np.array(positions_rad, float))
        if self.on_publish:
            self.on_publish(positions_rad)
        return PublishReport(out, tuple(range(1, 8)) if out is PublishOutcome.ACCEPTED else ())


class Rig:
    def __init__(self, config: OwnerConfig | None = None, p0=None, hooks=None):
        self.clock = SimClock()
        self.pub = Recorder()
        self.owner = ArmOwner(Arm.RIGHT, self.pub, self.clock, np.zeros(7) if p0 is None else p0,
                              config or default_config(), hooks)
        self.lease = self.owner.grant_lease("experiment", 1e9)
        self.seq = 0
        self.feedback = True
        self.fb_offset = np.zeros(7)

    def target(self, positions, seq=None, generation=None, lease="own"):
        if seq is None:
            self.seq += 1
            seq = self.seq
        pos = np.full(7, float(positions)) if np.ndim(positions) == 0 else np.asarray(positions, float)
        return ArmTarget(Arm.RIGHT, pos, seq, self.owner.generation if generation is None else generation,
                         self.lease if lease == "own" else lease)

    def submit(self, positions, **kw):
        return self.owner.submit(self.target(positions, **kw))

    def step(self, n=1):
        reps = []
        for _ in range(n):
            if self.feedback:
                last = self.pub.samples[-1] if self.pub.samples else self.owner.commanded_state()[0]
                self.owner.observe_feedback(last + self.fb_offset, self.clock.now())
            reps.append(self.owner.tick())
            self.clock.advance(self.owner.config.period_s)
        return reps


# ----------------------------------------------------------------- inconsistent-seed

J6_START, J6_TARGET = 0.34, 1.05
SEED_TABLE = {(0.2, 0.0): 0.340000, (0.0, -40.0): -5.262596, (0.0, 0.0): 0.340000}


@experiment("inconsistent-seed")
def inconsistent_seed(seed: int = 0) -> dict:
    """J6 +0.34 -> +1.05 rad, 5,400 deg/s, 90,000 deg/s^2, 5,000 deg/s^3, three initial states."""
    vmax, amax, jmax = (math.radians(x) for x in (5400.0, 90000.0, 5000.0))
    cases = []
    for (v0, a0), seed_min in SEED_TABLE.items():
        inp = InputParameter(1)
        inp.current_position, inp.current_velocity, inp.current_acceleration = [J6_START], [v0], [a0]
        inp.target_position = [J6_TARGET]
        inp.max_velocity, inp.max_acceleration, inp.max_jerk = [vmax], [amax], [jmax]
        traj = Trajectory(1)
        Ruckig(1).calculate(inp, traj)
        ext = segment_extrema(segments_from_trajectory(traj)[0])
        otg, out = Ruckig(1, 0.005), OutputParameter(1)
        sampled = [J6_START]
        while otg.update(inp, out) == Result.Working:
            sampled.append(out.new_position[0])
            out.pass_to_input(inp)
        sampled.append(out.new_position[0])
        cases.append({
            "v0": v0, "a0": a0, "min_position_seed_0_9_2": seed_min,
            "min_position_sampled": round(min(sampled), 6), "min_position_exact": round(ext.p_min, 6),
            "t_min_exact_s": round(ext.t_p_min, 6), "ruckig_position_extrema_min": round(traj.position_extrema[0].min, 6),
            "duration_s": round(traj.duration, 6), "samples": len(sampled),
        })
    result = {
        "experiment": "inconsistent-seed", "ruckig": ruckig.__version__, "loop_period_s": 0.005, "cases": cases,
        "note": "sampled = 5 ms Ruckig update loop; exact = extremum checker over the profile's jerk "
                "segments; the seed's figures come from ruckig 0.9.2.",
    }
    return write_experiment("inconsistent-seed", result, markdown_table(cases))


# ----------------------------------------------------------------------------- replay

def _target_stream(seed: int, rate_hz: float, duration_s: float, settle_s: float):
    """Deterministic smooth targets: per-joint sinusoids, then all joints 0.1 rad for settle_s."""
    rng = np.random.default_rng(seed)
    centre = np.array([0.3, 0.2, 0.1, 0.7, -0.1, 0.1, 0.2])
    amp = rng.uniform(0.15, 0.3, 7)
    freq = rng.uniform(0.05, 0.15, 7)  # peak target speed <= 0.3 * 2 pi * 0.15 = 0.28 rad/s
    phase = rng.uniform(0, 2 * np.pi, 7)
    n = int(round(duration_s * rate_hz))
    out = []
    for i in range(n):
        t = i / rate_hz
        if t < duration_s - settle_s:
            out.append((t, centre + amp * np.sin(2 * np.pi * freq * t + phase)))
        else:
            out.append((t, np.full(7, 0.1)))
    return out


def run_replay(seed: int, rate_hz: float = 60.0, duration_s: float = 70.0, settle_s: float = 8.0) -> dict:
    cfg = default_config()
    stream = _target_stream(seed, rate_hz, duration_s, settle_s)
    rig = Rig(cfg, p0=stream[0][1])
    n_ticks = int(round(duration_s / cfg.period_s))
    k_target = 0
    reps = []
    for k in range(n_ticks):
        now = k * cfg.period_s
        while k_target < len(stream) and stream[k_target][0] <= now + 1e-9:
            assert rig.submit(stream[k_target][1]).accepted
            k_target += 1
        reps.extend(rig.step(1))
    p = np.array([r.positions_rad for r in reps])
    v = np.array([r.velocities_rad_s for r in reps])
    a = np.array([r.accelerations_rad_s2 for r in reps])
    pub = np.array(rig.pub.samples)
    c = rig.owner.mailbox_counts()
    return {
        "rate_hz": rate_hz, "samples": len(pub), "targets": k_target, "plans": rig.owner.stats.plans,
        "moving_retargets": rig.owner.stats.moving_retargets,
        "max_velocity": float(np.abs(v).max()), "max_acceleration": float(np.abs(a).max()),
        "max_discrete_jerk": float((np.abs(np.diff(a, axis=0)) / cfg.period_s).max()),
        "max_step": float(np.abs(np.diff(np.vstack([stream[0][1], pub]), axis=0)).max()),
        "final_error": float(np.abs(p[-1] - 0.1).max()),
        "faults": len(rig.owner.stats.faults), "mailbox_balanced": c.balanced,
        "all_published": bool(all(r.published for r in reps)),
    }


BOUNDS = {"max_velocity": 0.3, "max_acceleration": 0.6, "max_discrete_jerk": 2.0, "max_step": 0.0015}


@experiment("replay")
def replay(seed: int = 0) -> dict:
    """Main 7-joint replay: 200 Hz output, 70 s, 4,200 targets at 60 Hz, final 0.1 rad."""
    r = run_replay(seed)
    r.update({
        "experiment": "replay", "seed": seed, "bounds": BOUNDS,
        "within_bounds": all(r[k] <= b + 1e-9 for k, b in BOUNDS.items()),
        "seed_figures": {"samples": 14000, "targets": 4200, "moving_retargets": 3898},
        "moving_retarget_definition": "a target taken into the plan while any commanded joint velocity is nonzero",
        "target_stream": "per-joint sinusoids (amplitude 0.15-0.3 rad, 0.05-0.15 Hz) for 62 s, then 0.1 rad for 8 s",
    })
    rows = [{"figure": k, "value": r[k], "bound": BOUNDS.get(k, "")} for k in
            ("samples", "targets", "moving_retargets", "max_velocity", "max_acceleration",
             "max_discrete_jerk", "max_step", "final_error")]
    return write_experiment("replay", r, markdown_table(rows))


# ------------------------------------------------------------------------------ rates

def _burst(n: int = 1000) -> int:
    rig = Rig()
    rig.step(2)
    for k in range(n):
        rig.submit(0.001 * (k % 100))
    return sum(r.new_plan for r in rig.step(5))


def concurrent_submissions(n_total: int = 100_000, n_threads: int = 8) -> dict:
    rig = Rig(OwnerConfig(require_feedback=False))
    per = [[rig.target(0.001 * (s % 100), seq=s) for s in range(i + 1, n_total + 1, n_threads)]
           for i in range(n_threads)]
    start = threading.Barrier(n_threads)

    def worker(batch):
        start.wait()
        for t in batch:
            rig.owner.submit(t)

    ths = [threading.Thread(target=worker, args=(b,)) for b in per]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    c = rig.owner.mailbox_counts()
    plans = sum(r.new_plan for r in rig.step(3))
    return {"submitted": c.submitted, "threads": n_threads, "accepted": c.accepted,
            "replaced": c.replaced, "rejected": c.rejected_by_reason, "pending_slots": c.pending,
            "balanced": c.balanced, "plans_after": plans}


@experiment("rates")
def rates(seed: int = 0) -> dict:
    """Target input at 20/60/90/120 Hz (20 s each), the 1,000-target burst, 100,000 concurrent."""
    per_rate = [run_replay(seed, hz, duration_s=20.0, settle_s=6.0) for hz in (20.0, 60.0, 90.0, 120.0)]
    conc = concurrent_submissions()
    result = {"experiment": "rates", "seed": seed, "per_rate": per_rate, "burst_targets": 1000,
              "burst_plans": _burst(1000), "concurrent": conc,
              "concurrent_pending_slots": conc["pending_slots"]}
    cols = ["rate_hz", "targets", "plans", "moving_retargets", "max_velocity", "max_acceleration",
            "max_discrete_jerk", "max_step", "final_error"]
    md = markdown_table(per_rate, cols) + f"\nburst of 1,000 -> {result['burst_plans']} plan(s); " \
        f"100,000 concurrent -> {conc['pending_slots']} pending slot(s), balanced={conc['balanced']}\n"
    return write_experiment("rates", result, md)


# ----------------------------------------------------------------------------- faults

def _moving_rig(config=None) -> Rig:
    rig = Rig(config)
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
    return {"case": name, "injected": injected, "outcome": f"fault {fault.value if fault else None}",
            "as_expected": fault is expect and after == 0, "frames_after": after,
            "ticks_to_latch": None if latched_at is None else latched_at + 1}


def _stop_race() -> dict:
    events = []
    gate, release = threading.Event(), threading.Event()
    hold = {"on": False}

    def after_compute(p):
        events.append(("computed", stop_done.is_set()))
        if hold["on"]:
            hold["on"] = False
            gate.set()
            release.wait(5.0)

    stop_done = threading.Event()
    rig = Rig(hooks=OwnerHooks(after_compute=after_compute))
    rig.pub.on_publish = lambda p: events.append(("published", stop_done.is_set()))
    rig.submit(0.6)
    rig.step(100)
    events.clear()
    hold["on"] = True
    th = threading.Thread(target=rig.step, args=(1,))
    th.start()
    gate.wait(5.0)

    def stopper():
        rig.owner.stop()
        stop_done.set()

    st = threading.Thread(target=stopper)
    st.start()
    release.set()
    th.join(5.0)
    st.join(5.0)
    rig.step(300)
    computed = [f for e, f in events if e == "computed"]
    published = [f for e, f in events if e == "published"]
    stale = sum(1 for c, p in zip(computed, published, strict=False) if p and not c)
    return {"case": "stop/publication race", "injected": "stop() while a computed sample is held before publish",
            "outcome": f"mode {rig.owner.mode.value}; in-flight sample published before stop returned",
            "as_expected": rig.owner.mode is Mode.STOPPED and stale == 0, "frames_after": stale,
            "brake_frames_computed_after_stop": sum(published)}


def _reject(name, injected, make, expect: RejectReason) -> dict:
    rig = _moving_rig()
    res = rig.owner.submit(make(rig))
    reps, _ = _after(rig, 20)
    return {"case": name, "injected": injected, "outcome": f"rejected {res.reason.value if res.reason else None}",
            "as_expected": res.reason is expect and not any(r.new_plan for r in reps),
            "frames_after": sum(r.new_plan for r in reps)}


def _brake(name, injected, inject, expect_mode: Mode, config=None) -> dict:
    """frames_after: samples published after the event that still tracked the old plan
    (published in mode TRACKING) instead of braking; counted from the tick reports."""
    rig = _moving_rig(config)
    inject(rig)
    reps, n = _after(rig, 300)
    a = np.array([r.accelerations_rad_s2 for r in reps])
    tracking_after = sum(1 for r in reps if r.published and r.mode is Mode.TRACKING)
    ok = rig.owner.mode is expect_mode and np.abs(a).max() <= 0.6 + 1e-9 and tracking_after == 0
    return {"case": name, "injected": injected, "outcome": f"braked to {rig.owner.mode.value}",
            "as_expected": bool(ok), "frames_after": tracking_after, "brake_frames_computed_after_event": n}


@experiment("faults")
def faults(seed: int = 0) -> dict:
    """Fault matrix: frames_after counts stale frames (computed before the event) reaching the
    bus after a stop, any frame after a latched fault, any new plan after a rejected target,
    and any frame still tracking the old plan after a brake event; all must be 0."""
    cfg = default_config()
    rows = [_stop_race()]
    rows.append(_reject("sequence replay", "resubmit an already accepted sequence",
                        lambda r: r.target(0.1, seq=r.seq), RejectReason.STALE_SEQUENCE))
    rows.append(_reject("foreign generation", "target of generation + 7",
                        lambda r: r.target(0.1, generation=r.owner.generation + 7), RejectReason.FOREIGN_GENERATION))
    rows.append(_latched("stale tracking", "feedback 0.2 rad off the commanded sample", _moving_rig(),
                         lambda r: setattr(r, "fb_offset", np.full(7, 0.2)), FaultKind.TRACKING_ERROR))
    rows.append(_latched("stale feedback", "feedback stops arriving", _moving_rig(),
                         lambda r: setattr(r, "feedback", False), FaultKind.STALE_FEEDBACK))
    rows.append(_brake("loss of authority", "lease revoked mid-motion", lambda r: r.owner.revoke_authority(), Mode.HOLD))
    rows.append(_brake("timing gap (brake)", "5-period tick gap", lambda r: r.clock.advance(4 * cfg.period_s), Mode.HOLD))
    rows.append(_latched("timing gap (fault)", "5-period tick gap, late_tick_action=fault",
                         _moving_rig(replace(cfg, late_tick_action=LateTickAction.FAULT)),
                         lambda r: r.clock.advance(4 * cfg.period_s), FaultKind.LATE_TICK))

    def blocked(r):
        r.owner.stop()
        r.pub.default = PublishOutcome.REFUSED

    rows.append(_latched("blocked braking path", "publisher refuses every sample during the brake",
                         _moving_rig(), blocked, FaultKind.BLOCKED_BRAKING_PATH))
    for outcome, kind in ((PublishOutcome.UNCERTAIN, FaultKind.UNCERTAIN_OUTPUT),
                          (PublishOutcome.PARTIAL, FaultKind.PARTIAL_OUTPUT)):
        name = "uncertain output" if outcome is PublishOutcome.UNCERTAIN else "partial batch"
        rows.append(_latched(name, f"one {outcome.value} publish report", _moving_rig(),
                             lambda r, o=outcome: r.pub.script.append(o), kind))
    result = {"experiment": "faults", "cases": rows,
              "all_as_expected": all(r["as_expected"] for r in rows),
              "max_frames_after": max(r["frames_after"] for r in rows)}
    return write_experiment("faults", result, markdown_table(rows, ["case", "injected", "outcome", "as_expected", "frames_after"]))


# ------------------------------------------------------------------------ legacy-race

def superseded_publications(plan_tags: list) -> int:
    """Samples published for a superseded command after a newer command's first sample.

    plan_tags: per published sample, in bus order, the increasing id of the command it was
    computed for (legacy task id, owner target sequence; None before any command). A
    sample whose id is older than one already seen on the bus is a stale write."""
    newest, stale = None, 0
    for tag in plan_tags:
        if tag is None:
            continue
        if newest is not None and tag < newest:
            stale += 1
        newest = tag if newest is None else max(newest, tag)
    return stale



def _legacy_schedule() -> dict:
    in_window, resume = threading.Event(), threading.Event()

    def between(tid, step):
        if tid == 1 and step == 5:
            in_window.set()
            resume.wait(5.0)

    host = LegacyHost(Recorder(), hooks=LegacyHooks(between_check_and_write=between))
    _, w1 = host.position_task(np.full(7, 0.5), max_steps=50)
    in_window.wait(5.0)
    _, w2 = host.position_task(np.full(7, -0.5), max_steps=3)
    w2.join(5.0)
    resume.set()
    w1.join(5.0)
    stop_gate, stop_resume = threading.Event(), threading.Event()
    host.hooks.between_check_and_write = lambda tid, step: (stop_gate.set(), stop_resume.wait(5.0)) if step == 2 else None
    _, w3 = host.position_task(np.full(7, 0.2), max_steps=4)
    stop_gate.wait(5.0)
    host.stop()
    n_at_stop = len(host.publish_log)
    stop_resume.set()
    w3.join(5.0)
    s = np.array([x for _, x in host.publish_log])
    before_stop = [tid for tid, _ in host.publish_log[:n_at_stop]]
    return {"stale_after_replacement": superseded_publications(before_stop),
            "stale_publishes_after_acceptance": len(host.stale_publishes()),
            "frames_after_stop": len(host.publish_log) - n_at_stop,
            "writers": len({t for t, _ in host.publish_log}),
            "max_step": float(np.abs(np.diff(s, axis=0)).max())}


def _owner_schedule() -> dict:
    in_window, resume = threading.Event(), threading.Event()
    hold = {"on": False}
    flags = {"replaced": False, "stopped": False}
    tags = []

    def after_compute(p):
        tags.append(flags["stopped"])

    def before_publish(p):
        if hold["on"]:
            hold["on"] = False
            in_window.set()
            resume.wait(5.0)

    plan = {"seq": None}  # the target sequence the owner's current plan heads for

    def after_take(t):
        plan["seq"] = t.sequence

    rig = Rig(hooks=OwnerHooks(after_take=after_take, after_compute=after_compute, before_publish=before_publish))
    pub_flags = []
    pub_plans = []  # per published sample: the target it was computed for
    pub_writers = []  # per published sample: the trajectory generator that computed it
    stop_at = {"n": None}

    def on_publish(p):
        pub_flags.append(flags["stopped"])
        pub_plans.append(plan["seq"])
        pub_writers.append(id(rig.owner._otg))

    rig.pub.on_publish = on_publish
    rig.submit(0.5)
    rig.step(5)
    hold["on"] = True
    th = threading.Thread(target=rig.step, args=(1,))
    th.start()
    in_window.wait(5.0)
    accepted = rig.submit(0.05).accepted  # replacement accepted while a sample is held
    resume.set()
    th.join(5.0)
    rig.step(50)
    hold["on"] = True
    th = threading.Thread(target=rig.step, args=(1,))
    th.start()
    in_window.wait(5.0)

    def stopper():
        rig.owner.stop()
        flags["stopped"] = True

    st = threading.Thread(target=stopper)
    stop_at["n"] = len(pub_plans)
    st.start()
    resume.set()
    th.join(5.0)
    st.join(5.0)
    rig.step(200)
    stale = sum(1 for c, p in zip(tags, pub_flags, strict=True) if p and not c)
    s = np.array(rig.pub.samples)
    return {"replacement_accepted": accepted,
            "stale_after_replacement": superseded_publications(pub_plans[:stop_at["n"]]),
            "frames_after_stop_stale": stale, "writers": len(set(pub_writers)),
            "max_step": float(np.abs(np.diff(s, axis=0)).max()),
            "brake_frames_after_stop": sum(pub_flags)}


@experiment("legacy-race")
def legacy_race(seed: int = 0) -> dict:
    """Legacy detached workers (study model) vs the owner under the same forced schedule.

    stale_after_replacement: samples of a superseded command published after its
    replacement's first sample; writers: distinct trajectory generators whose samples reached
    the bus (legacy: one worker per task; owner: its Ruckig instance), both observed."""
    legacy, owner = _legacy_schedule(), _owner_schedule()
    result = {"experiment": "legacy-race", "legacy": legacy, "owner": owner,
              "legacy_stale_writes": legacy["stale_after_replacement"] + legacy["frames_after_stop"],
              "owner_stale_writes": owner["stale_after_replacement"] + owner["frames_after_stop_stale"],
              "note": "legacy = experiments/legacy_host.py, a model for study only"}
    rows = [{"system": "legacy", **{k: legacy[k] for k in ("stale_after_replacement", "max_step")},
             "stale_after_stop": legacy["frames_after_stop"]},
            {"system": "owner", **{k: owner[k] for k in ("stale_after_replacement", "max_step")},
             "stale_after_stop": owner["frames_after_stop_stale"]}]
    return write_experiment("legacy-race", result, markdown_table(rows))


# --------------------------------------------------------------------------- extremum

@experiment("extremum")
def extremum(seed: int = 0, n_traj: int = 250, n_samples: int = 301) -> dict:
    """Exact checker vs dense sampling on random 7-joint Ruckig trajectories (brakes, tails)."""
    from ruckig import Synchronization

    from controllers.extremum import JerkSegment, state_at

    rng = np.random.default_rng(seed)
    obs = 0
    worst_state = 0.0  # |checker state - ruckig at_time| over all observations
    enclosed = True  # every sampled p, v, a lies inside the exact extrema
    ruckig_extrema_misses = 0  # joints where trajectory.position_extrema is narrower than exact
    ruckig_worst = 0.0
    braked = unequal = 0
    for k in range(n_traj):
        inp = InputParameter(7)
        if k % 2:
            inp.synchronization = Synchronization.No
        inp.current_position = rng.uniform(-1, 1, 7).tolist()
        inp.current_velocity = rng.uniform(-0.6, 0.6, 7).tolist()
        inp.current_acceleration = rng.uniform(-1.2, 1.2, 7).tolist()
        inp.target_position = rng.uniform(-1, 1, 7).tolist()
        inp.target_velocity = rng.uniform(-0.1, 0.1, 7).tolist()
        inp.max_velocity, inp.max_acceleration, inp.max_jerk = [0.3] * 7, [0.6] * 7, [2.0] * 7
        traj = Trajectory(7)
        Ruckig(7).calculate(inp, traj)
        segs = segments_from_trajectory(traj)
        ext = [segment_extrema(s) for s in segs]
        braked += sum(pr.brake.duration > 0 for pr in traj.profiles[0])
        unequal += sum(abs(sum(pr.t) + pr.brake.duration - traj.duration) > 1e-9 for pr in traj.profiles[0])
        for t in np.linspace(0.0, traj.duration, n_samples):
            p, v, a = traj.at_time(t)
            for d in range(7):
                q = state_at(segs[d], t)
                worst_state = max(worst_state, abs(q[0] - p[d]), abs(q[1] - v[d]), abs(q[2] - a[d]))
                e = ext[d]
                enclosed &= (e.p_min - 1e-12 <= p[d] <= e.p_max + 1e-12 and e.v_min - 1e-12 <= v[d] <= e.v_max + 1e-12
                             and e.a_min - 1e-12 <= a[d] <= e.a_max + 1e-12)
                obs += 1
        for d, pe in enumerate(traj.position_extrema):
            gap = max(pe.min - ext[d].p_min, ext[d].p_max - pe.max)
            if gap > 1e-9:
                ruckig_extrema_misses += 1
                ruckig_worst = max(ruckig_worst, gap)
    zj_segments = [JerkSegment(1.0, 0.0, 1.0, -2.0, 0.0)]
    zj = segment_extrema(zj_segments)
    zj_endpoint_max = max(state_at(zj_segments, 0.0)[0], state_at(zj_segments, 1.0)[0])
    result = {
        "experiment": "extremum", "seed": seed, "trajectories": n_traj, "joint_state_observations": obs,
        "seed_observations": 526750, "max_state_mismatch": worst_state, "samples_enclosed": bool(enclosed),
        "joints_with_brake_phase": braked, "joints_with_unequal_tail": unequal,
        "ruckig_position_extrema_narrower_joints": ruckig_extrema_misses,
        "ruckig_position_extrema_worst_gap_rad": ruckig_worst,
        "zero_jerk_case": {"v0": 1.0, "a0": -2.0, "j": 0.0, "duration_s": 1.0, "p_max_exact": zj.p_max,
                           "t_p_max_s": zj.t_p_max, "endpoint_max": zj_endpoint_max},
    }
    rows = [{k: v for k, v in result.items() if not isinstance(v, dict)}]
    return write_experiment("extremum", result, markdown_table(rows))
