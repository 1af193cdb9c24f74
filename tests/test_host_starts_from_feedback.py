"""A ``rob-twin host`` on Amber drives starts from what the drives report, and says why it
stopped in the words of what happened.

A real-time ROB bank serves in a thread of this process (``bank_support.bank_in_thread``);
hosts run against it over socketcand on 127.0.0.1, one after another, as two ``rob-twin
host`` commands would. Deadlines are generous (a shared 2-core machine), except where a
test misses one on purpose.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from bank_support import bank_in_thread
from rob_twin.cli.bus import host_end_line
from rob_twin.controllers.codec import count_to_rad
from rob_twin.models.robot import robot_of
from rob_twin.twin.bus.host_process import HostConfig, run_host

COUNT_RAD = count_to_rad(1)  # one codec count (1/128 deg) [rad]
ARMS = ("right", "left")


@pytest.fixture(scope="module")
def bank():
    with bank_in_thread("bank-host-start", robot="rob") as proc:
        yield proc


def _host(bank, **kw) -> HostConfig:
    return HostConfig(
        port=bank.server.port,
        publish_deadline_s=kw.pop("publish_deadline_s", 0.25),
        feedback_timeout_s=1.0,
        **kw,
    )


def _bank_joints_at_rest(bank, within_rad: float = 2e-5, timeout_s: float = 10.0) -> dict:
    """{arm: joint positions [rad]} from the bank's own state once two looks 0.1 s apart
    agree (the arm came to rest after the last host left it)."""
    deadline = time.monotonic() + timeout_s
    before = None
    while True:
        buses = bank._snapshot["buses"]
        now = {b["arm"]: np.array(b["joint_positions_rad"]) for b in buses.values()}
        if before is not None and all(np.abs(now[a] - before[a]).max() <= within_rad for a in ARMS):
            return now
        assert time.monotonic() < deadline, "the arm did not come to rest"
        before = now
        time.sleep(0.1)


def test_a_second_host_starts_where_the_first_left_the_arm(bank):
    first = run_host(_host(bank, stream="wave", seconds=1.0))
    assert first["ended"] == "seconds", first["end_reason"]
    rest = _bank_joints_at_rest(bank)
    rob = robot_of("rob")
    for arm in ARMS:  # the first host moved the arm away from home: a start at home would show
        assert np.abs(rest[arm] - rob.home(arm)).max() > 0.05
    for stream in ("hold", "home"):  # hold: the start pose; home: a trajectory from it
        second = run_host(_host(bank, stream=stream, seconds=0.4))
        assert second["ended"] == "seconds", second["end_reason"]
        for arm in ARMS:
            a = second["arms"][arm]
            assert a["fault"] is None, a["fault_reason"]  # no tracking_error at start
            reported = np.array(a["start_feedback_rad"])
            commanded = np.array(a["first_command_rad"])
            assert np.abs(commanded - reported).max() <= COUNT_RAD, (stream, arm)
            # the report is the arm as the bank has it (feedback truncates to whole counts)
            assert np.abs(reported - rest[arm]).max() <= 2 * COUNT_RAD, (stream, arm)
        rest = _bank_joints_at_rest(bank)


def test_a_missed_batch_deadline_is_not_called_a_lost_bank(bank):
    report = run_host(_host(bank, stream="hold", seconds=5.0, publish_deadline_s=1e-6))
    assert report["ended"] == "deadline_missed", report["end_reason"]
    assert report["ended_at_s"] < 5.0  # it stopped at once, not after its seconds
    for arm in ARMS:
        loss = report["loss"][arm]
        assert loss["cause"] == "deadline_missed" and loss["fault"] == "uncertain_output"
        assert loss["batch_s"] > loss["deadline_s"] == 1e-6
        assert loss["feedback_age_s"] < loss["feedback_timeout_s"]  # the bank still answered
    line = host_end_line(report)
    assert "missed its own batch deadline" in line and "lost the bank" not in line
    assert "over the 0.0 ms batch deadline" in line and "was still answering" in line
