"""The documentation works as written: the MkDocs site (``mkdocs.yml``, ``docs/``) builds with
``--strict`` (a broken link or anchor, or a page outside the nav, fails it); every ``console``
block of the README and the pages runs, each ``$`` line as a person would type it from the
repository root, and prints the lines shown after it; the README's tour and glossary are the
pages' own; the bank's ``status`` fields are the ones BANK_PROTOCOL.md lists.

Convention for runnable blocks (docs/tour.md, "How the commands in these pages are tested"):
a fenced ``console`` block holds ``$ COMMAND`` lines, each followed by lines it must print, in
order (other lines may come between; ``...`` inside a line stands for any text). A command
must exit 0, or the code a trailing ``# exit N`` names. ``<!-- not run: REASON -->`` on the
line before the fence skips a block, with its reason.
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


def console_blocks() -> list[Block]:
    """Every distinct ``console`` block of the README and docs/, with where it appears."""
    found: dict[str, Block] = {}
    for page in PAGES:
        lines = page.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() != "```console":
                i += 1
                continue
            end = lines.index("```", i + 1)
            text = "\n".join(lines[i + 1 : end])
            before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            marker = NOT_RUN.search(before)
            where = f"{page.relative_to(ROOT)}:{i + 1}"
            if text in found:
                found[text].where.append(where)
            else:
                found[text] = Block([where], text, marker.group("reason") if marker else None)
            i = end + 1
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
