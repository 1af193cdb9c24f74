"""Robot files and the MJCF they name are bounded: each malformed or hostile
variant of a generated robot (``experiments/robot_factory.generate_robot``) is a
``RobotFileError`` naming the field and its valid range, and ``--robot FILE`` exits 2 with
that one line, never a traceback; a huge MJCF is refused before MuJoCo parses it."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from rob_twin.cli.main import main as cli_main
from rob_twin.experiments.robot_factory import generate_robot
from rob_twin.models.robot_description import (
    MAX_MJCF_BYTES,
    MAX_MJCF_ELEMENTS,
    MAX_TOML_DEPTH,
    RobotFileError,
    load_robot_file,
)
from rob_twin.models.robot_model import load_robot_model


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """One generated amber and one generated ideal robot (their folders)."""
    root = tmp_path_factory.mktemp("robots")
    return {
        family: generate_robot(root / family, 2, family=family).robot_file.parent
        for family in ("amber", "ideal")
    }


def _copy(made, tmp_path, family="amber", toml=None, xml=None) -> Path:
    folder = tmp_path / family
    shutil.copytree(made[family], folder)
    for name, change in (("robot.toml", toml), ("scene.xml", xml)):
        if change is not None:
            path = folder / name
            text = path.read_text(encoding="utf-8")
            changed = change(text)
            assert changed != text, f"{name}: the change did not apply"
            path.write_text(changed, encoding="utf-8")
    return folder / "robot.toml"


def _once(old: str, new: str):
    return lambda text: text.replace(old, new, 1)


def _first_home(text: str, value: str) -> str:
    return re.sub(r"home_rad = \[[^,]+", f"home_rad = [{value}", text, count=1)


def _first_range(text: str, value: str) -> str:
    return re.sub(r'range="[^"]+"', f'range="{value}"', text, count=1)


CASES = {
    "toml nested 5000 deep": (
        {"toml": lambda t: "deep = " + "[" * 5000 + "]" * 5000 + "\n" + t},
        "robot file nesting",
        f"at most {MAX_TOML_DEPTH} levels",
    ),
    "toml nested 12 deep": (
        {"toml": lambda t: "deep = " + "[" * 12 + "]" * 12 + "\n" + t},
        "robot file nesting",
        f"at most {MAX_TOML_DEPTH} levels",
    ),
    "mass nan": (
        {"xml": lambda x: re.sub(r'mass="[^"]+"', 'mass="nan"', x, count=2)},
        "mjcf",
        "finite numbers",
    ),
    "joint range nan": ({"xml": lambda x: _first_range(x, "nan 2.0")}, "mjcf", "finite numbers"),
    "joint range inf": ({"xml": lambda x: _first_range(x, "-inf 2.0")}, "mjcf", "finite numbers"),
    "tcp_body on a scene that has right/tcp": (
        {"xml": _once("<worldbody>", '<worldbody>\n    <site name="right/tcp"/>')},
        "arms.right.tcp_body",
        "tcp_site = 'right/tcp'",
    ),
    "home 1e308": (
        {"toml": lambda t: _first_home(t, "1e308")},
        "arms.right.home_rad",
        "[-100, 100] rad",
    ),
    "home outside the joint range": (
        {"toml": lambda t: _first_home(t, "3.1")},
        "arms.right.home_rad[0]",
        "range in the MJCF",
    ),
    "a reversed joint range": (  # MuJoCo would drop the limit without a word
        {"xml": lambda x: _first_range(x, "1.0 -1.0")},
        "arms.right.joints[0]",
        "lo < hi",
    ),
    "a model that does not compile": (
        {
            "xml": _once(
                '<joint name="arm_r_joint1"',
                '<inertial pos="0 0 0" mass="0" diaginertia="0 0 0"/>\n<joint name="arm_r_joint1"',
            )
        },
        "mjcf",
        "an MJCF MuJoCo compiles",
    ),
    "can channel with a path": (
        {"toml": _once('channel = "CAN5"', 'channel = "../../dev/x"')},
        "arms.right.can.channel",
        "1 to 15 of A-Z a-z 0-9 _ . -",
    ),
    "can channel '..'": (
        {"toml": _once('channel = "CAN5"', 'channel = ".."')},
        "arms.right.can.channel",
        "not '.' or '..'",
    ),
    "can channel of 16 characters": (
        {"toml": _once('channel = "CAN5"', 'channel = "can0123456789abc"')},
        "arms.right.can.channel",
        "1 to 15 of A-Z a-z 0-9 _ . -",
    ),
    "both arms on one channel": (
        {"toml": _once('channel = "CAN6"', 'channel = "CAN5"')},
        "arms.left.can.channel",
        "one bus per arm",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_robot_file_is_a_typed_error_naming_field_and_range(made, tmp_path, case):
    changes, field, valid = CASES[case]
    path = _copy(made, tmp_path, **changes)
    with pytest.raises(RobotFileError) as err:
        load_robot_model(load_robot_file(path))
    text = str(err.value)
    assert field in text and "valid:" in text and valid in text, text
    assert "\n" not in text


def test_ideal_drives_without_kp_are_refused(made, tmp_path):
    path = _copy(made, tmp_path, "ideal", toml=lambda t: re.sub(r"\nkp = [0-9.e+]+", "", t))
    with pytest.raises(RobotFileError, match=r"drives\.kp=None .*required for family 'ideal'"):
        load_robot_file(path)


def test_a_10_mb_mjcf_is_refused_before_it_is_parsed(made, tmp_path):
    geoms = "".join(
        f'<geom name="g{i}" type="sphere" size="0.01" pos="{i * 1e-3:.3f} 5 0" contype="0"/>\n'
        for i in range(120_000)
    )
    path = _copy(made, tmp_path, xml=_once("<worldbody>", "<worldbody>\n" + geoms))
    assert path.with_name("scene.xml").stat().st_size > MAX_MJCF_BYTES
    started = time.perf_counter()
    with pytest.raises(RobotFileError, match=rf"mjcf size=.*at most {MAX_MJCF_BYTES} bytes"):
        load_robot_file(path)
    assert time.perf_counter() - started < 5.0


def test_too_many_elements_are_refused_before_they_are_parsed(made, tmp_path):
    sites = "<site/>" * (MAX_MJCF_ELEMENTS + 1)  # 7 bytes each: far below the byte cap
    path = _copy(made, tmp_path, xml=_once("<worldbody>", "<worldbody>\n" + sites))
    with pytest.raises(RobotFileError, match=rf"mjcf elements=.*at most {MAX_MJCF_ELEMENTS}"):
        load_robot_file(path)


def test_an_included_file_counts_toward_the_caps(made, tmp_path):
    path = _copy(
        made, tmp_path, xml=_once("<worldbody>", '<include file="more.xml"/>\n<worldbody>')
    )
    path.with_name("more.xml").write_text(
        '<mujoco><default><geom mass="nan"/></default></mujoco>', encoding="utf-8"
    )
    with pytest.raises(RobotFileError, match=r"more\.xml line 1: mass=\"nan\""):
        load_robot_file(path)


@pytest.mark.parametrize(
    "case", ["toml nested 5000 deep", "tcp_body on a scene that has right/tcp", "home 1e308"]
)
def test_robot_on_the_command_line_exits_2_with_one_line(made, tmp_path, capsys, case):
    changes, field, _valid = CASES[case]
    path = _copy(made, tmp_path, **changes)
    capsys.readouterr()
    code = cli_main(
        ["run", "experiments/scenarios/wave.json", "--check", "--robot", str(path), "--json"]
    )
    out = capsys.readouterr()
    reply = json.loads(out.out)
    assert code == 2 and reply["exit_code"] == 2, reply
    assert field in reply["error"] and "\n" not in reply["error"], reply["error"]
    assert "Value error," not in reply["error"], reply["error"]  # pydantic's prefix, dropped
    assert "Traceback" not in out.err
