"""What the fuzz properties share: hostile values, document mutations, the case budget
of the two campaigns, the in-process command line, and the outcome tally.

Budget: under ``make test`` (Hypothesis' default profile) a property marked ``fuzz`` that
takes its settings from ``budget(n)`` runs ``n`` cases derandomized (the seeded slice:
the same cases on every run); under ``make fuzz`` (profile ``fuzz``, seeded by
``--hypothesis-seed``) it runs the profile's ``max_examples`` times ``share`` (a costly
surface, a command line run per case, takes a share below 1).

Tally: every case records its outcome per surface, ``refused`` (the surface's typed error,
or exit 2), ``disagreed`` (``certify`` exit 1: a claim the recomputation contradicts) or
``accepted`` (a value the surface takes, checked against its bounds by the property); a
case that ends otherwise fails its property. ``conftest.py`` prints the counts at the end of
a run and writes them, as JSON, to ``$FUZZ_TALLY`` when that is set.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

CAMPAIGN = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
OUTCOMES = ("refused", "disagreed", "accepted")
TALLY: Counter = Counter()

# Values a hostile peer would try in any field.
NASTY = st.sampled_from(
    [math.nan, math.inf, -math.inf, 1e308, -1e308, 10**30, -(10**30), 0, -1, 1e-320, ""]
    + [None, True, False, [], {}, [[]], "x" * 300, "\u0000", "\ud7ff", "1" * 50]
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
# numbers only: huge, tiny, negative, non-finite, and ordinary ones
NUMBERS = st.floats() | st.integers(-(10**20), 10**20) | st.sampled_from([1e300, -1e300, 1e-320])


def budget(slice_examples: int, share: float = 1.0) -> settings:
    """The settings of one fuzz property (see the module docstring)."""
    quiet = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
    if CAMPAIGN:
        n = max(slice_examples, int(settings.default.max_examples * share))
        return settings(deadline=None, suppress_health_check=quiet, max_examples=n)
    return settings(
        deadline=None,
        suppress_health_check=quiet,
        max_examples=slice_examples,
        derandomize=True,
        database=None,
    )


def record(surface: str, outcome: str) -> str:
    """Count one case of ``surface`` as ``outcome`` (one of OUTCOMES); returns it."""
    assert outcome in OUTCOMES, outcome
    TALLY[(surface, outcome)] += 1
    return outcome


def tally_rows() -> list[dict]:
    """One row per surface: cases and each outcome's count, surfaces in name order."""
    surfaces = sorted({s for s, _ in TALLY})
    rows = []
    for s in surfaces:
        counts = {o: TALLY[(s, o)] for o in OUTCOMES}
        rows.append({"surface": s, "cases": sum(counts.values()), **counts})
    return rows


def write_tally(path: str | None) -> None:
    """The tally as JSON at ``path`` (nothing when None or when no case ran here)."""
    rows = tally_rows()
    if path and rows:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(rows, indent=1) + "\n")


def json_text(value) -> str:
    return json.dumps(value, allow_nan=True)


def leaves(doc, path=(), items: int = 3):
    """Every (path, value) of a decoded JSON document, containers included (the first
    ``items`` items of each list)."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaves(v, (*path, k), items)
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:items]):
            yield from leaves(v, (*path, i), items)


def get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def mutated(doc, pick: int, value, paths=None):
    """``doc`` with the ``pick``-th leaf (mod count; of ``paths`` when given) replaced by
    ``value`` (or deleted when ``value`` is the string "<delete>")."""
    paths = paths or [p for p, _ in leaves(doc) if p]
    path = paths[pick % len(paths)]
    out = copy.deepcopy(doc)
    parent = get(out, path[:-1])
    if value == "<delete>" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


def cli(argv: list[str]) -> tuple[int, str, str]:
    """``rob-twin ARGV`` in this process: (exit code, stdout, stderr)."""
    from rob_twin.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def clean_exit(code: int, out: str, err: str, allowed=(0, 1, 2)) -> dict:
    """The ``--json`` reply of a command that ended cleanly: an allowed exit code, no
    traceback, and a refusal (exit 2) in one line naming what is valid."""
    assert "Traceback" not in err, err
    assert code in allowed, (code, out[-2000:], err[-2000:])
    reply = json.loads(out)
    if code == 2:
        assert "\n" not in reply["error"] and "valid" in reply["error"], reply["error"]
    return reply


def one_line_refusal(err: Exception, *names: str) -> None:
    """A typed refusal: one line, naming what is valid and (when given) one of ``names``."""
    text = str(err)
    assert "\n" not in text and "valid" in text, text
    if names:
        assert any(n in text for n in names), (names, text)


TOML_SPECIAL = {math.inf: "inf", -math.inf: "-inf"}


def toml_value(value) -> str:
    """``value`` as a TOML value (dicts as inline tables; None as an empty table: TOML
    has no null)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else TOML_SPECIAL.get(value, repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return "{}"


def toml_text(doc: dict) -> str:
    """A TOML document of ``doc``: one ``key = value`` line per top-level key."""
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in doc.items())
