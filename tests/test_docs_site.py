"""The documentation works as written: the MkDocs site (``mkdocs.yml``, ``docs/``) builds with
``--strict`` (a broken link or anchor, or a page outside the nav, fails it); every fenced block
of the README and the pages is run or checked, or says why not; the README's tour and glossary
are the pages' own; the bank's ``status`` fields are the ones BANK_PROTOCOL.md lists.

Convention (docs/tour.md, "How the commands in these pages are tested"): a fenced ``console``
block holds ``$ COMMAND`` lines, each followed by lines it must print, in order (other lines
may come between; ``...`` inside a line stands for any text). A command must exit 0, or the
code a trailing ``# exit N`` names. A ``bash`` block runs as one script (``bash -e``); a
``python`` block runs as a script (with the interpreter its first line names, ``# PATH``, if
any); a ``toml`` block is a robot file (or a table of one) that the robot loader must read and
build. A block that talks to ``socketcand`` gets a bank of its own (``CAN_CONFIG`` as the pages
set it, with the bank's port); each runs in a fresh folder that sees the repository's files.
``<!-- not run: REASON -->`` on the line just before a fence skips the block, with its reason;
any other block (a diagram, an output sample) must carry it, or ``CLAIMED`` must name the test
that runs it, so a new block that nothing runs fails ``test_every_block_is_run_or_marked``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
COMMAND_TIMEOUT_S = 120
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->")
EXIT = re.compile(r"#\s*exit\s+(?P<code>\d+)\s*$")
FENCE = re.compile(r"```(?P<lang>[\w+-]*)")


@dataclass
class Command:
    line: str  # as typed, without the "$ "
    shows: list[str] = field(default_factory=list)  # lines it must print, in order

    @property
    def exit_code(self) -> int:
        m = EXIT.search(self.line)
        return int(m.group("code")) if m else 0


@dataclass
class Block:
    where: list[str]  # "README.md:23" for each place the block appears
    text: str
    skip_reason: str | None

    def commands(self) -> list[Command]:
        commands: list[Command] = []
        for line in self.text.splitlines():
            if line.startswith("$ "):
                commands.append(Command(line[2:]))
            elif line.strip() and line.strip() != "...":
                assert commands, f"{self.where[0]}: output before the first '$ ' line: {line!r}"
                commands[-1].shows.append(line)
        return commands


@dataclass
class Fence:
    """One fenced block of a page: its info string (``lang``), text and 'not run' reason."""

    page: str  # "docs/tour.md"
    line: int  # the opening fence's line, from 1
    lang: str  # "" for a bare fence
    text: str
    skip_reason: str | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def page_fences(page: Path) -> list[Fence]:
    lines = page.read_text().splitlines()
    found: list[Fence] = []
    i = 0
    while i < len(lines):
        opening = FENCE.fullmatch(lines[i].strip())
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{page.relative_to(ROOT)}:{i + 1}: a fence never closed"
        marker = NOT_RUN.fullmatch(lines[i - 1].strip()) if i else None
        where = str(page.relative_to(ROOT))
        text = "\n".join(lines[i + 1 : end])
        reason = marker.group("reason") if marker else None
        found.append(Fence(where, i + 1, opening.group("lang"), text, reason))
        i = end + 1
    return found


FENCES = [fence for page in PAGES for fence in page_fences(page)]


def console_blocks() -> list[Block]:
    """Every distinct ``console`` block of the README and docs/, with where it appears."""
    found: dict[str, Block] = {}
    for fence in FENCES:
        if fence.lang != "console":
            continue
        if fence.text in found:
            found[fence.text].where.append(fence.where)
        else:
            found[fence.text] = Block([fence.where], fence.text, fence.skip_reason)
    return list(found.values())


BLOCKS = console_blocks()


def shown_line_pattern(shown: str) -> re.Pattern:
    """A shown output line as a pattern: ``...`` stands for any text."""
    return re.compile(".*".join(re.escape(part) for part in shown.strip().split("...")))


def missing_output(shows: list[str], output: str) -> str | None:
    """The first shown line not printed (in order) in ``output``; None when all were."""
    lines = output.splitlines()
    at = 0
    for shown in shows:
        pattern = shown_line_pattern(shown)
        while at < len(lines) and not pattern.fullmatch(lines[at].strip()):
            at += 1
        if at == len(lines):
            return shown
        at += 1
    return None


def workspace(tmp_path: Path) -> Path:
    """A folder that looks like the repository root to a command (its files linked, ``.venv``
    the environment running this test) but keeps what the command writes (``out/``)."""
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") or entry.name in ("out", "site"):
            continue
        (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / ".venv").symlink_to(VENV)
    return tmp_path


def test_the_convention_finds_the_tour():
    """The parser sees the README's tour: both robots, each with plan, certify and run."""
    lines = [c.line for b in BLOCKS for c in b.commands() if b.skip_reason is None]
    for robot_flag in ("", "--robot openarm"):
        for verb in ("plan", "certify", "run"):
            hit = [
                ln
                for ln in lines
                if ln.startswith(f".venv/bin/rob-twin {verb} ")
                and (robot_flag in ln if robot_flag else "openarm" not in ln)
            ]
            assert hit or verb == "certify" and robot_flag, (verb, robot_flag, lines)
    assert missing_output(["a ... c", "e"], "a b c\nd\ne") is None
    assert missing_output(["e", "a ... c"], "a b c\nd\ne") == "a ... c"
    assert Command("rob-twin certify bad.json  # exit 2").exit_code == 2


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where[0] for b in BLOCKS])
def test_console_block_runs_as_written(block, tmp_path):
    if block.skip_reason is not None:
        assert block.skip_reason, f"{block.where[0]}: a 'not run' marker needs its reason"
        pytest.skip(f"not run: {block.skip_reason}")
    work = workspace(tmp_path)
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    for command in block.commands():
        done = subprocess.run(
            ["bash", "-c", command.line],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        said = f"{block.where}: $ {command.line}\n{done.stdout[-3000:]}"
        assert done.returncode == command.exit_code, f"exit {done.returncode}\n{said}"
        missing = missing_output(command.shows, done.stdout)
        assert missing is None, f"did not print {missing!r}\n{said}"


# Every other fenced block: run by a runner of its language, claimed by a test of its own, or
# marked "not run" with its reason.
SHELL = ("bash", "sh", "shell")
RUNNERS = {  # a fence's language -> the test that runs each unmarked block of it
    "console": "test_console_block_runs_as_written",
    **dict.fromkeys(SHELL, "test_shell_block_runs_as_written"),
    "python": "test_python_block_runs_as_written",
    "toml": "test_robot_file_block_loads_and_builds",
}
# blocks no runner of their language takes: (page, text in the block) -> the test that runs it
CLAIMED = {
    ("docs/BANK_PROTOCOL.md", "| nc -q1 127.0.0.1 $CONTROL_PORT"): (
        "test_the_bank_protocol_example_runs_against_a_bank"
    ),
}
# what a shell block's command must print, where its trailing comment says so
SHELL_PRINTS = {"damiao scan --motor-type 4340": "Found 8 motor(s):"}
INTERPRETER = re.compile(r"#\s*(?P<path>[\w./-]+/python[\d.]*)")
CAN_CONFIG = re.compile(r"export CAN_CONFIG='(?P<json>[^']*)'")


def claimed_by(fence: Fence) -> str | None:
    tests = [t for (page, text), t in CLAIMED.items() if page == fence.page and text in fence.text]
    return tests[0] if tests else None


def unmarked(*langs: str) -> list[Fence]:
    return [f for f in FENCES if f.skip_reason is None and f.lang in langs]


def test_every_block_is_run_or_marked():
    """Each fenced block has a runner, a claiming test or a 'not run' marker with a reason;
    each marker stands on the line just before a fence. Prints the count per page (``-s``)."""
    problems = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines):
            after = lines[n + 1].strip() if n + 1 < len(lines) else ""
            if NOT_RUN.fullmatch(line.strip()) and not FENCE.fullmatch(after):
                where = f"{page.relative_to(ROOT)}:{n + 1}"
                problems.append(f"{where}: a 'not run' marker not on the line just before a fence")
    counts: dict[str, list[int]] = {}
    for fence in FENCES:
        run_marked = counts.setdefault(fence.page, [0, 0])
        if fence.skip_reason is not None:
            run_marked[1] += 1
            if not fence.skip_reason.strip():
                problems.append(f"{fence.where}: a 'not run' marker needs its reason")
        elif fence.lang in RUNNERS or claimed_by(fence):
            run_marked[0] += 1
        else:
            problems.append(
                f"{fence.where}: nothing runs this ```{fence.lang} block: run it from "
                "tests/test_docs_site.py, or put <!-- not run: REASON --> on the line before it"
            )
    for (page, text), test in CLAIMED.items():
        hits = [f.where for f in FENCES if f.page == page and text in f.text]
        if len(hits) != 1 or test not in globals():
            problems.append(f"CLAIMED {page} {text!r} -> {test}: blocks {hits}")
    assert all(test in globals() for test in RUNNERS.values())
    for page, (run, marked) in counts.items():
        print(f"{page}: {run} run, {marked} not run")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def openarm_bank():
    """OpenArm's bank on free ports for the blocks that reach one over socketcand."""
    from bank_support import bank_in_thread

    with bank_in_thread("docs-openarm-bank") as proc:
        yield proc


def block_env(fence: Fence, request) -> dict[str, str]:
    """The environment a block runs in: ``.venv`` activated; for a block that talks to
    ``socketcand``, ``CAN_CONFIG`` as the pages export it, with a running bank's port."""
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    if "socketcand" in fence.text:
        import json

        (config,) = {m["json"] for f in FENCES for m in CAN_CONFIG.finditer(f.text)}
        bank = request.getfixturevalue("openarm_bank")
        env["CAN_CONFIG"] = json.dumps({**json.loads(config), "port": bank.server.port})
    return env


def run_block(argv: list[str], fence: Fence, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert done.returncode == 0, f"{fence.where}: exit {done.returncode}\n{done.stdout[-3000:]}"
    return done.stdout


def _ids(fences: list[Fence]) -> list[str]:
    return [f.where for f in fences]


@pytest.mark.parametrize("fence", unmarked(*SHELL), ids=_ids(unmarked(*SHELL)))
def test_shell_block_runs_as_written(fence, tmp_path, request):
    """One ``bash -e`` script, from a folder that looks like the repository root."""
    env = block_env(fence, request)
    output = run_block(["bash", "-e", "-c", fence.text], fence, workspace(tmp_path), env)
    for text, printed in SHELL_PRINTS.items():
        if text in fence.text:
            assert printed in output, f"{fence.where}: did not print {printed!r}\n{output[-3000:]}"


def completed_robot_file(text: str) -> str:
    """A robot file block whose ``[arms.left]`` only says "the same" (a comment), completed
    from ``[arms.right]`` as a reader would: right -> left, r_ -> l_, can0 -> can1."""
    head, sep, left = text.partition("[arms.left]")
    if not sep or any(ln.strip() and not ln.strip().startswith("#") for ln in left.splitlines()):
        return text
    right = head.split("[arms.right]", 1)[1]
    for old, new in (("right", "left"), ('"r_', '"l_'), ('"can0"', '"can1"')):
        right = right.replace(old, new)
    return f"{head}[arms.left]{right}"


def stand_in_mjcf(robot: dict) -> str:
    """An MJCF with what a robot file names (joints, actuators, TCP site or body), for a
    block whose MJCF is the reader's own: each arm a chain of capsules."""
    arms, motors = [], []
    for k, arm in enumerate(robot["arms"].values()):
        xml, close = f'<body name="base{k}" pos="0 {0.4 * k - 0.2} 0.5">', "</body>"
        for j, joint in enumerate(arm["joints"]):
            name = arm.get("tcp_body") if j == len(arm["joints"]) - 1 else None
            xml += f'<body name="{name or f"b{k}_{j}"}" pos="0 0 0.1">'
            axis = "0 1 0" if j % 2 else "0 0 1"
            xml += f'<joint name="{joint}" axis="{axis}" range="-3 3"/>'
            xml += '<geom type="capsule" fromto="0 0 0 0 0 0.1" size="0.02" mass="0.5"/>'
            close += "</body>"
        if arm.get("tcp_site"):
            xml += f'<site name="{arm["tcp_site"]}" pos="0 0 0.1"/>'
        arms.append(xml + close)
        for act, joint in zip(arm.get("actuators", []), arm["joints"], strict=False):
            motors.append(f'<motor name="{act}" joint="{joint}"/>')
    return (
        f'<mujoco><compiler angle="radian"/><worldbody>{"".join(arms)}</worldbody>'
        f"<actuator>{''.join(motors)}</actuator></mujoco>"
    )


def robot_file_of(fence: Fence, folder: Path) -> Path:
    """The block as a robot file in ``folder``: a whole file (completed where it says "the
    same"; its MJCF the reader's own gets a stand-in), or a table of one put in OpenArm's
    shipped file in place of that table. Skips where the MJCF it names is not installed."""
    import tomllib

    from rob_twin.models.robot_description import resolve_mjcf

    raw = tomllib.loads(fence.text)
    if "name" not in raw:  # a table of a robot file
        shipped = (ROOT / "models" / "openarm" / "robot.toml").read_text()
        (header,) = re.findall(r"^\[[\w.]+\]$", fence.text, re.M)
        assert header in shipped, f"{fence.where}: OpenArm's file has no {header} to replace"
        start = shipped.index(header)
        end = shipped.index("\n[", start)
        text = shipped[:start] + fence.text + shipped[end:]
    else:
        text = completed_robot_file(fence.text)
        mjcf = resolve_mjcf(raw["mjcf"], folder)
        if "{" in raw["mjcf"] and not mjcf.is_file():
            pytest.skip(f"{fence.where}: {raw['mjcf']} is not installed ({mjcf})")
        if not mjcf.is_file():
            mjcf.write_text(stand_in_mjcf(tomllib.loads(text)))
    path = folder / "robot.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("fence", unmarked("toml"), ids=_ids(unmarked("toml")))
def test_robot_file_block_loads_and_builds(fence, tmp_path):
    """The robot loader reads the block and builds the canonical model; what the block says
    is what the loaded file holds."""
    import tomllib

    from rob_twin.models.names import arm_joint
    from rob_twin.models.robot_description import load_robot_file
    from rob_twin.models.robot_model import load_robot_model

    desc = load_robot_file(robot_file_of(fence, tmp_path))
    model = load_robot_model(desc)
    for side in ("right", "left"):
        for j in range(1, len(desc.arm(side).joints) + 1):
            assert model.joint(arm_joint(side, j)).id >= 0

    def holds(said: dict, says: dict, at: str) -> None:
        for key, value in says.items():
            if isinstance(value, dict):
                holds(said[key], value, f"{at}{key}.")
            else:
                assert said[key] == value, f"{fence.where}: {at}{key} is {said[key]!r}"

    holds(desc.file.model_dump(), tomllib.loads(fence.text), "")


@pytest.mark.parametrize("fence", unmarked("python"), ids=_ids(unmarked("python")))
def test_python_block_runs_as_written(fence, tmp_path, request):
    """The block as a script from a folder that looks like the repository root, by the
    interpreter its first line names (``# .venv-lerobot/bin/python``; skipped where that is
    not installed) or ``.venv``'s. A robot file it loads (``aloha/robot.toml``) is the
    page's block of that name."""
    work = workspace(tmp_path)
    named = INTERPRETER.fullmatch(fence.text.splitlines()[0].strip())
    python = ROOT / named["path"] if named else Path(sys.executable)
    if not python.exists():
        pytest.skip(f"{named['path']} is not installed here (see the page: {fence.page})")
    for name in re.findall(r'"(\w+)/robot\.toml"', fence.text):
        (source,) = [f for f in unmarked("toml") if f'name = "{name}"' in f.text]
        (work / name).mkdir()
        robot_file_of(source, work / name)
    script = work / "docs_block.py"
    script.write_text(fence.text + "\n", encoding="utf-8")
    run_block([str(python), script.name], fence, work, block_env(fence, request))


NC = '''#!{python}
"""nc HOST PORT (as ``nc -q1``): stdin to HOST:PORT, then what comes back, to stdout."""
import socket, sys
host, port = [a for a in sys.argv[1:] if not a.startswith("-")][-2:]
with socket.create_connection((host, int(port)), timeout=30) as s:
    s.sendall(sys.stdin.buffer.read())
    s.shutdown(socket.SHUT_WR)
    try:
        while chunk := s.recv(65536):
            sys.stdout.buffer.write(chunk)
            s.settimeout(1.0)
    except TimeoutError:
        pass
'''


def test_the_bank_protocol_example_runs_against_a_bank(tmp_path):
    """BANK_PROTOCOL.md's example, each ``$`` line (continuations joined) against a bank's
    control port (``$CONTROL_PORT``), printing the replies shown. ``nc`` is a stand-in that
    does what ``nc -q1 HOST PORT`` does (the system's may be missing or differ)."""
    from bank_support import bank_in_thread

    (fence,) = [
        f for f in FENCES if claimed_by(f) == "test_the_bank_protocol_example_runs_against_a_bank"
    ]
    block = Block([fence.where], fence.text.replace("\\\n", ""), None)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nc").write_text(NC.format(python=sys.executable))
    (bin_dir / "nc").chmod(0o755)
    with bank_in_thread("docs-protocol-bank") as bank:
        env = {**os.environ, "CONTROL_PORT": str(bank.control_port)}
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        for command in block.commands():
            done = subprocess.run(
                ["bash", "-c", command.line],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
            )
            said = f"{fence.where}: $ {command.line}\n{done.stdout}{done.stderr[-2000:]}"
            assert done.returncode == 0, said
            assert missing_output(command.shows, done.stdout) is None, said


def test_site_builds_strict_and_the_readme_anchors_exist(tmp_path):
    """``mkdocs build --strict``: every page in the nav, every link and anchor resolved; the
    README's links into docs/ name headings the built pages have."""
    site = tmp_path / "site"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    for page in sorted((ROOT / "docs").glob("*.md")):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), f"{page.name} was not built ({seconds:.1f} s)"
    readme = (ROOT / "README.md").read_text()
    for page, anchor in re.findall(r"\]\(docs/([\w-]+)\.md#([\w-]+)\)", readme):
        html = (site / page / "index.html").read_text()
        assert f'id="{anchor}"' in html, f"README links to docs/{page}.md#{anchor}: no such heading"


def _section(text: str, heading: str) -> str:
    """From ``heading`` to the next heading of its level or above."""
    start = text.index(heading)
    level = heading.split(" ", 1)[0]
    ends = [text.find("\n" + "#" * n + " ", start + 1) for n in range(1, len(level) + 1)]
    ends = [e for e in ends if e > 0]
    return text[start : min(ends) if ends else len(text)]


def test_the_readme_tour_is_the_pages_tour_and_fits_the_first_screen():
    readme = (ROOT / "README.md").read_text()
    tour = (ROOT / "docs" / "tour.md").read_text()
    blocks = re.findall(r"```console\n(.*?)```", readme, re.S)
    assert len(blocks) == 2 and all(b in tour for b in blocks)
    first_screen = "\n".join(readme.splitlines()[:60])
    for words in ("make demo", "make test", "rob-twin plan", "rob-twin certify", "rob-twin run"):
        assert words in first_screen, words
    assert first_screen.count("--robot openarm") >= 2
    prose = [ln for ln in readme.splitlines() if not ln.startswith("|")]
    assert max(len(ln) for ln in prose) <= 100


def glossary_of_readme() -> dict[str, str]:
    rows = _section((ROOT / "README.md").read_text(), "## Glossary").splitlines()
    found = {}
    for row in rows:
        m = re.fullmatch(r"\| \*\*(?P<term>.+?)\*\* \| (?P<meaning>.+) \|", row)
        if m:
            assert not re.search(r"(?<!\\)\|", m.group("meaning")), f"unescaped | in {row}"
            meaning = m.group("meaning").replace("\\|", "|")  # a table cell escapes its |
            found[m.group("term")] = meaning.replace("](docs/", "](")
    return found


def glossary_of_pages() -> dict[str, str]:
    text = (ROOT / "docs" / "glossary.md").read_text()
    entries = re.findall(r"^## ([^\n]+)\n\n(.+?)(?=\n\n## |\n*\Z)", text, re.S | re.M)
    return {term: " ".join(meaning.split()) for term, meaning in entries}


def test_the_glossary_defines_the_words_once_in_both_places():
    readme, pages = glossary_of_readme(), glossary_of_pages()
    assert readme == pages
    needed = ("owner", "Amber", "Damiao", "bank", "host", "coal", "certificate", "margin")
    for word in needed + ("horizon", "seed (paper)", "seed (random)"):
        assert any(word in term for term in readme), word
    assert "4 cm" in readme["horizon"] and "20 mm" in readme["horizon"]


STATUS_FIELDS = re.compile(r"^- `(\w+)`", re.M)


def test_bank_protocol_lists_every_status_field_of_a_running_bank():
    """A ROB (Amber) bank's ``status`` reply: each top-level field and each bus counter is
    named in BANK_PROTOCOL.md's status section, and the section names no field the bank
    does not send (``socketcan``: only on SocketCAN)."""
    from bank_support import bank_in_thread
    from rob_twin.twin.bus.bank_control import control

    doc = _section((ROOT / "docs" / "BANK_PROTOCOL.md").read_text(), '### `{"cmd": "status"}`')
    with bank_in_thread("docs-status", robot="rob") as bank:
        status = control(bank.control_port, {"cmd": "status"})
    assert status["ok"] is True and status["calibration"] == "uncalibrated"
    documented = set(STATUS_FIELDS.findall(doc))
    assert documented == set(status) - {"ok"} | {"socketcan"}, documented
    bus = next(iter(status["buses"].values()))
    channel = next(iter(status["socketcand"]["channels"].values()))
    for where, keys in (("buses.*", bus), ("socketcand", status["socketcand"])):
        for key in keys:
            assert f"`{key}`" in doc, f"status.{where}.{key} is not in BANK_PROTOCOL.md"
    for counter in channel:
        assert f"`{counter}`" in doc, f"status.socketcand.channels.*.{counter} is not listed"
