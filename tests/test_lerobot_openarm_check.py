"""``make check-lerobot`` inside ``make test``: LeRobot 0.6.1's ``BiOpenArmFollower`` (both
OpenArm arms, 16 Damiao drives) drives ``rob-twin bank --robot openarm`` over socketcand,
unchanged: it connects, observes, reaches goal poses on both arms and disables every drive on
disconnect (``scripts/check_lerobot.py``, run by ``.venv-lerobot``'s Python: lerobot needs
Python >= 3.12 and torch). Where that venv is missing the test is skipped, saying how to make
it; the script's own verdict and exit code are checked everywhere (without lerobot it must
fail, exit 1, and say why).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_lerobot.py"
LEROBOT_PY = ROOT / ".venv-lerobot" / "bin" / "python"
ROB_TWIN = Path(sys.executable).parent / "rob-twin"


def _run(python: Path | str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), str(SCRIPT), "--rob-twin", str(ROB_TWIN), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.mark.skipif(
    not LEROBOT_PY.is_file(),
    reason="no .venv-lerobot: `make lerobot-venv` makes it (Python 3.12, lerobot 0.6.1 "
    "without its dependencies plus what its OpenArm follower imports, torch among them: "
    "about 4.7 GB); `make check-lerobot` runs this check",
)
def test_lerobots_bi_openarm_follower_reaches_goals_on_both_arms_of_the_twin(tmp_path):
    out = tmp_path / "check.json"
    res = _run(LEROBOT_PY, "--json", str(out))
    lines = res.stdout.strip().splitlines()
    assert res.returncode == 0 and lines, res.stdout[-3000:] + res.stderr[-3000:]
    assert lines[-1].startswith("check-lerobot: PASS"), lines[-1]
    data = json.loads(out.read_text())
    assert data["ok"] and data["lerobot"] == "0.6.1" and data["observation_keys"] == 16
    assert data["max_goal_error_deg"] <= data["tolerance_deg"]
    assert data["disabled_on_disconnect"] and data["hardware_io"] is False
    for channel, counters in data["bank_counters"].items():
        assert counters["unanswered"] == 0, (channel, counters)
        assert counters["replies"] == counters["command_frames"] > 0, (channel, counters)
    print(f"\n{lines[-1]}")


def test_without_lerobot_the_check_fails_with_its_reason_and_exit_1(tmp_path):
    """rob-twin's own Python has no lerobot: the check must say so, not pass."""
    out = tmp_path / "check.json"
    res = _run(sys.executable, "--json", str(out), timeout=60)
    assert res.returncode == 1, res.stdout + res.stderr
    last = res.stdout.strip().splitlines()[-1]
    assert last.startswith("check-lerobot: FAIL: lerobot is not importable") and (
        "make lerobot-venv" in last
    ), last
    assert json.loads(out.read_text())["ok"] is False
