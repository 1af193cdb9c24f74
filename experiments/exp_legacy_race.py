"""The legacy-race experiment: legacy detached workers vs the owner under one forced schedule.

Simulated (hardware_io false).
"""

from __future__ import annotations

import threading

import numpy as np
from rob_twin.controllers.owner_types import OwnerHooks
from rob_twin.experiments.legacy_host import LegacyHooks, LegacyHost
from rob_twin.experiments.output import markdown_table, write_experiment
from rob_twin.experiments.owner_rig import RecordingPublisher, experiment_rig
from rob_twin.experiments.registry import experiment


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

    host = LegacyHost(
        RecordingPublisher(detailed=False), hooks=LegacyHooks(between_check_and_write=between)
    )
    _, w1 = host.position_task(np.full(7, 0.5), max_steps=50)
    in_window.wait(5.0)
    _, w2 = host.position_task(np.full(7, -0.5), max_steps=3)
    w2.join(5.0)
    resume.set()
    w1.join(5.0)
    stop_gate, stop_resume = threading.Event(), threading.Event()
    host.hooks.between_check_and_write = lambda tid, step: (
        (stop_gate.set(), stop_resume.wait(5.0)) if step == 2 else None
    )
    _, w3 = host.position_task(np.full(7, 0.2), max_steps=4)
    stop_gate.wait(5.0)
    host.stop()
    n_at_stop = len(host.publish_log)
    stop_resume.set()
    w3.join(5.0)
    s = np.array([x for _, x in host.publish_log])
    before_stop = [tid for tid, _ in host.publish_log[:n_at_stop]]
    return {
        "stale_after_replacement": superseded_publications(before_stop),
        "stale_publishes_after_acceptance": len(host.stale_publishes()),
        "frames_after_stop": len(host.publish_log) - n_at_stop,
        "writers": len({t for t, _ in host.publish_log}),
        "max_step": float(np.abs(np.diff(s, axis=0)).max()),
    }


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

    rig = experiment_rig(
        hooks=OwnerHooks(
            after_take=after_take, after_compute=after_compute, before_publish=before_publish
        )
    )
    pub_flags = []
    pub_plans = []  # per published sample: the target it was computed for
    pub_writers = []  # per published sample: the trajectory generator that computed it
    stop_at = {"n": None}

    def on_publish(p):
        pub_flags.append(flags["stopped"])
        pub_plans.append(plan["seq"])
        pub_writers.append(id(rig.owner._otg))

    def held_tick() -> threading.Thread:
        """One tick on its own thread, held in the window after its sample is computed."""
        hold["on"] = True
        th = threading.Thread(target=rig.step, args=(1,))
        th.start()
        in_window.wait(5.0)
        return th

    rig.pub.on_publish = on_publish
    rig.submit(0.5)
    rig.step(5)
    th = held_tick()
    accepted = rig.submit(0.05).accepted  # replacement accepted while a sample is held
    resume.set()
    th.join(5.0)
    rig.step(50)
    th = held_tick()

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
    return {
        "replacement_accepted": accepted,
        "stale_after_replacement": superseded_publications(pub_plans[: stop_at["n"]]),
        "frames_after_stop_stale": stale,
        "writers": len(set(pub_writers)),
        "max_step": float(np.abs(np.diff(s, axis=0)).max()),
        "brake_frames_after_stop": sum(pub_flags),
    }


@experiment("legacy-race")
def legacy_race(seed: int = 0) -> dict:
    """Legacy detached workers (study model) vs the owner under the same forced schedule.

    stale_after_replacement: samples of a superseded command published after its
    replacement's first sample; writers: distinct trajectory generators whose samples reached
    the bus (legacy: one worker per task; owner: its Ruckig instance), both observed."""
    legacy, owner = _legacy_schedule(), _owner_schedule()
    result = {
        "experiment": "legacy-race",
        "legacy": legacy,
        "owner": owner,
        "legacy_stale_writes": legacy["stale_after_replacement"] + legacy["frames_after_stop"],
        "owner_stale_writes": owner["stale_after_replacement"] + owner["frames_after_stop_stale"],
        "note": "legacy = experiments/legacy_host.py, a model for study only",
    }
    rows = [
        {
            "system": "legacy",
            **{k: legacy[k] for k in ("stale_after_replacement", "max_step")},
            "stale_after_stop": legacy["frames_after_stop"],
        },
        {
            "system": "owner",
            **{k: owner[k] for k in ("stale_after_replacement", "max_step")},
            "stale_after_stop": owner["frames_after_stop_stale"],
        },
    ]
    return write_experiment("legacy-race", result, markdown_table(rows))
