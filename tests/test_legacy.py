"""The legacy host model (study only) shows the stale write; the owner under the same
schedule publishes nothing stale."""

from __future__ import annotations

import threading

import numpy as np
from rob_twin.controllers.owner_types import OwnerHooks
from rob_twin.experiments.legacy_host import LegacyHooks, LegacyHost
from test_owner_support import RecordingPublisher, Rig


def test_legacy_worker_publishes_after_replacement_accepted():
    in_window = threading.Event()
    resume = threading.Event()

    def between(tid, step):
        if tid == 1 and step == 5:
            in_window.set()  # worker 1 passed its cancellation check ...
            assert resume.wait(5.0)  # ... and is held before its write

    pub = RecordingPublisher()
    host = LegacyHost(pub, hooks=LegacyHooks(between_check_and_write=between))
    _, w1 = host.position_task(np.full(7, 0.5), max_steps=6)
    assert in_window.wait(5.0)
    _, w2 = host.position_task(np.full(7, -0.5), max_steps=3)  # replacement accepted
    w2.join(5.0)
    resume.set()
    w1.join(5.0)
    stale = host.stale_publishes()
    assert stale and stale[0][1] == 1
    tids = [t for t, _ in host.publish_log]
    assert tids[-1] == 1 and 2 in tids  # the old worker wrote after the new one


def test_legacy_stop_is_not_a_barrier():
    in_window, resume = threading.Event(), threading.Event()

    def between(tid, step):
        if step == 2:
            in_window.set()
            assert resume.wait(5.0)

    host = LegacyHost(RecordingPublisher(), hooks=LegacyHooks(between_check_and_write=between))
    _, w = host.position_task(np.full(7, 0.5), max_steps=4)
    assert in_window.wait(5.0)
    host.stop()
    n_at_stop = len(host.publish_log)
    resume.set()
    w.join(5.0)
    assert len(host.publish_log) > n_at_stop  # published after stop returned


def test_owner_same_schedule_publishes_nothing_stale():
    in_window, resume = threading.Event(), threading.Event()
    hold = {"on": False}

    def before_publish(p):
        if hold["on"]:
            hold["on"] = False
            in_window.set()
            assert resume.wait(5.0)

    rig = Rig(hooks=OwnerHooks(before_publish=before_publish))
    rig.submit(0.5)
    rig.step(5)
    hold["on"] = True
    th = threading.Thread(target=rig.step, args=(1,))
    th.start()
    assert in_window.wait(5.0)
    assert rig.submit(0.05).accepted  # replacement accepted while a sample is in flight
    stopper = threading.Thread(target=rig.owner.stop)
    stopper.start()
    resume.set()
    th.join(5.0)
    stopper.join(5.0)
    n_at_stop = len(rig.pub.samples)
    reps = rig.step(200)
    assert n_at_stop == 6  # the in-flight sample went out before stop returned
    assert all(not r.new_plan for r in reps)  # the replaced target was discarded by stop
    s = np.array(rig.pub.samples)
    assert np.abs(np.diff(s, axis=0)).max() <= 0.0015 + 1e-12  # one continuous writer
    assert rig.owner.mailbox_counts().discarded == 1
