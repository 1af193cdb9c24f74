"""``rob-twin host --publish-deadline S``: the host's batch deadline from the command line
(20 ms by default; a loaded desktop or a real-time test beside other jobs needs more). A
value outside (0, 1] s is refused by name with exit 2 before any bus is opened; a valid one
reaches the host's configuration."""

from __future__ import annotations

import pytest
from rob_twin.cli.main import main


@pytest.mark.parametrize("value", ["0", "-0.01", "1.5", "nan", "inf", "soon"])
def test_a_bad_publish_deadline_is_refused_by_name_with_exit_2(value, capsys):
    assert main(["host", "--port", "1", "--publish-deadline", value]) == 2
    err = capsys.readouterr().err
    assert f"--publish-deadline={value!r} is invalid" in err and "(0, 1]" in err, err


def test_the_publish_deadline_reaches_the_host_and_defaults_to_20_ms(monkeypatch):
    from rob_twin.twin.bus import host_process

    seen = []

    def fake_run_host(cfg, on_ready=None):
        seen.append(cfg.publish_deadline_s)
        raise host_process.HostError("stop here")  # before any bus: exit 2

    monkeypatch.setattr(host_process, "run_host", fake_run_host)
    assert main(["host", "--port", "1", "--publish-deadline", "0.15"]) == 2
    assert main(["host", "--port", "1"]) == 2
    assert seen == [0.15, 0.02]
