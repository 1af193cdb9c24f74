"""The project explains itself: the README, the docs, the model and scenario
READMEs and the notebooks refer to nothing outside the repository (a clone has no
``../shared/DESIGN.md`` and no ``shared/research/``), and every relative link they give
points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [ROOT / "README.md", ROOT / "CHANGELOG.md", *ROOT.glob("docs/**/*.md")]
    + [*ROOT.glob("models/*/*.md"), *ROOT.glob("experiments/*/README.md")]
    + [*ROOT.glob("notebooks/*.ipynb")]
)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# a path into the project's working notes (shared/research/..., shared/DESIGN.md), which a
# clone does not have, written with or without ../
OUTSIDE = re.compile(
    r"\.\./(shared|\.library|seeds)\b|/work/|\.\./\.\./"
    r"|(?<![\w./-])shared/(research|seeds|hooks|DESIGN\.md)\b"
)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_outside_the_repository_is_referred_to(doc):
    text = doc.read_text()
    hits = sorted({m.group(0) for m in OUTSIDE.finditer(text)})
    assert not hits, f"{doc.relative_to(ROOT)} refers outside the repository: {hits}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_of_the_repository(doc):
    missing = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path = (doc.parent / target).resolve()
        if not path.exists() or ROOT not in path.parents and path != ROOT:
            missing.append(target)
    assert not missing, f"{doc.relative_to(ROOT)} links to missing files: {missing}"
