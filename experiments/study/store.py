"""Study results on disk: ``rows.csv`` grows one flushed line per finished task, so a killed
study keeps every row it finished; ``study.json`` records the spec the rows belong to, so
``--resume`` continues only the same study.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from rob_twin.experiments.study.spec import StudySpec
from rob_twin.experiments.study.worker import COLUMNS
from rob_twin.models.bounded_json import JsonLimits, read_bounded_json
from rob_twin.models.errors import RobTwinError

INT_COLUMNS = {"row", "pair", "goal_seed", "plan_seed", "repairs", "worker"}
TEXT_COLUMNS = {"status", "reason", "error", "goals"}


class StudyOutputError(RobTwinError, FileExistsError):
    """An output folder that already holds rows of a study (or of another one)."""


def check_out_dir(out_dir: Path) -> None:
    """StudyOutputError (before any work) unless ``out_dir`` is a folder or a path where one
    can be made: not an existing file, no existing file among its parents."""
    out_dir = Path(out_dir)
    for part in (out_dir, *out_dir.parents):
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                what = "is a file" if part == out_dir else f"has the file {part} on its way"
                raise StudyOutputError(
                    f"study --out={str(out_dir)!r} is invalid ({what}); valid: a folder, or a "
                    "path where one can be made"
                )
            return


def _parse(column: str, text: str):
    if text == "":
        return "" if column in ("reason", "error") else None
    if column in TEXT_COLUMNS:
        return text
    return int(text) if column in INT_COLUMNS else float(text)


def read_rows(path: Path) -> list[dict]:
    """The rows of a ``rows.csv`` (typed; empty cells are None), a torn last line skipped."""
    if not path.is_file():
        return []
    rows = []
    with path.open(newline="") as f:
        for raw in csv.DictReader(f):
            try:
                rows.append({c: _parse(c, raw.get(c) or "") for c in COLUMNS})
            except (ValueError, TypeError):
                continue  # the line a kill cut short
    return rows


class RowStore:
    """Append-only row file of one study in ``out_dir``."""

    def __init__(
        self, out_dir: Path, spec: StudySpec, resume: bool = False, overwrite: bool = False
    ):
        self.out_dir = Path(out_dir)
        self.csv_path = self.out_dir / "rows.csv"
        self.manifest = self.out_dir / "study.json"
        identity = spec.model_dump(mode="json")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        existing = read_rows(self.csv_path)
        if self.manifest.is_file() and not overwrite:
            manifest = read_bounded_json(
                self.manifest.read_bytes(),
                what=f"study manifest {self.manifest}",
                limits=JsonLimits(max_bytes=4_000_000),
            )
            recorded = manifest.get("spec") if isinstance(manifest, dict) else None
            if not resume:
                raise StudyOutputError(
                    f"{self.out_dir} already holds a study ({len(existing)} rows); valid: --resume "
                    "to continue it, --overwrite to start again, or another --out"
                )
            if recorded != identity:
                raise StudyOutputError(
                    f"{self.out_dir} holds rows of a different spec than this one; valid: --resume "
                    "with the spec it ran, --overwrite, or another --out"
                )
        if overwrite or not resume:
            existing = []
            self.csv_path.unlink(missing_ok=True)
        self.manifest.write_text(json.dumps({"spec": identity}, indent=2) + "\n")
        self.done = {r["row"] for r in existing}  # row numbers only: a big study stays small here
        self._rewrite(existing)  # drop a torn line before appending
        self._file = self.csv_path.open("a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=COLUMNS)

    def _rewrite(self, rows: list[dict]) -> None:
        tmp = self.csv_path.with_suffix(".tmp")
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(sorted(rows, key=lambda r: r["row"]))
        os.replace(tmp, self.csv_path)

    def append(self, row: dict) -> None:
        self._writer.writerow(row)
        self._file.flush()
        self.done.add(row["row"])

    def close(self) -> list[dict]:
        """Close the file and rewrite it in row order; return the rows (typed)."""
        self._file.close()
        rows = read_rows(self.csv_path)
        self._rewrite(rows)
        return sorted(rows, key=lambda r: r["row"])
