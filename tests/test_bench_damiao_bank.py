"""``python -m rob_twin.experiments.bench damiao_bank``, shortened: both latency transports
(socketcand to a bank in its own process, python-can's virtual bus in this one) answer every
frame of all 16 drives, and damiao-motor's part finds the eight drives of an arm. The latency
figures themselves are not asserted (a shared machine); LeRobot's part is left out here
(tests/test_lerobot_openarm_check.py runs it where .venv-lerobot exists)."""

from __future__ import annotations

from rob_twin.experiments import bench_damiao_bank as B
from rob_twin.experiments.registry import benchmarks


def test_the_benchmark_is_registered_and_runs_shortened_with_no_frame_lost(tmp_path):
    assert "damiao_bank" in benchmarks()
    md = tmp_path / "damiao_bank.md"
    res = B.run(load_s=0.3, lerobot=False, md_path=md)
    for key in ("socketcand", "virtual_bus"):
        lat = res["latency"][key]
        assert lat["drives"] == 16 and lat["frames_sent"] == 2 * 8 * 300, (key, lat)
        assert lat["frames_lost"] == 0, (key, lat)
        assert lat["latency_all"]["replies"] == lat["frames_sent"], (key, lat)
    counters = res["latency"]["socketcand"]["bank_counters"]
    assert all(c["unanswered"] == 0 for c in counters.values()), counters
    dm = res["damiao_motor"]
    if "skipped" not in dm:  # damiao-motor is in the test extra
        assert dm["scan"]["drives_found"] == 8 and dm["scan"]["exit"] == 0, dm["scan"]
        assert dm["register_read"]["reads"] > 0
    assert res["lerobot"]["skipped"] and res["ok"], res["verdict"]
    text = md.read_text()
    assert "Command-to-reply latency" in text and "hardware_io: false" in text
