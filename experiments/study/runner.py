"""Run a study: check it whole and estimate its size first (``preflight``: no row runs or is
written when the spec cannot run, or is beyond the caps without ``force``), expand the spec,
skip rows already stored (``resume``), stream the rest through a backend into the row store
with a progress bar, then write the report.

``replay_row`` plans one row again in this process and compares it with the stored row.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rob_twin.experiments.study.backends import LocalBackend, RayBackend, default_workers
from rob_twin.experiments.study.preflight import StudyLimits, preflight
from rob_twin.experiments.study.report import summarize, write_report
from rob_twin.experiments.study.spec import StudySpec
from rob_twin.experiments.study.store import RowStore, check_out_dir, read_rows
from rob_twin.experiments.study.tasks import context, expand, task_for_row
from rob_twin.experiments.study.worker import TIMING_COLUMNS, run_task
from tqdm import tqdm

Backend = LocalBackend | RayBackend


def default_out_dir(spec: StudySpec) -> Path:
    return Path("out") / "studies" / spec.name


def run_study(
    spec: StudySpec,
    base_dir: Path,
    out_dir: Path | None = None,
    *,
    backend: Backend | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    spec_path: str = "SPEC",
    limits: StudyLimits | None = None,
    force: bool = False,
) -> dict:
    """Run every task of ``spec`` not yet in ``out_dir``; return the stamped summary
    (``estimate``: the preflight estimate; ``verdict``: ``clean``, ``errors`` when a row
    raised, ``all failed`` when no row succeeded).

    StudySpecError (StudyTooLargeError beyond ``limits`` unless ``force``) before any row.
    A KeyboardInterrupt leaves the finished rows in ``rows.csv`` (``resume=True`` continues)."""
    out_dir = Path(out_dir or default_out_dir(spec))
    check_out_dir(out_dir)  # before the preflight builds anything
    backend = backend or LocalBackend()
    workers = getattr(backend, "workers", None) or default_workers()
    est = preflight(spec, base_dir, workers, limits, force)
    tasks = expand(spec, base_dir)
    ctx = context(spec, base_dir)
    store = RowStore(out_dir, spec, resume=resume, overwrite=overwrite)
    todo = [t for t in tasks if t.row not in store.done]
    bar = tqdm(
        total=len(tasks),
        initial=len(tasks) - len(todo),
        unit="plan",
        desc=spec.name,
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    failed = [0]

    def on_row(row: dict) -> None:
        store.append(row)
        failed[0] += row["status"] != "success"
        bar.update(1)
        bar.set_postfix(failed=failed[0], refresh=False)

    t0 = time.perf_counter()
    try:
        backend.run(ctx, todo, on_row)
    finally:
        bar.close()
        rows = store.close()
    wall_s = time.perf_counter() - t0
    summary = summarize(spec, rows, backend=backend.label, wall_s=wall_s, expected=len(tasks))
    summary["ran_now"] = len(todo)
    summary["estimate"] = est.as_dict()
    return write_report(spec, rows, summary, out_dir, spec_path)


def comparable(row: dict) -> dict:
    """A row without its machine-dependent columns (times, worker id)."""
    return {k: v for k, v in row.items() if k not in TIMING_COLUMNS}


def replay_row(spec: StudySpec, base_dir: Path, row: int, out_dir: Path | None = None) -> dict:
    """Plan row ``row`` again here.

    Returns {"row": new row, "stored": stored row or None, "same": bool | None}.
    """
    task = task_for_row(spec, base_dir, row)
    new = run_task(context(spec, base_dir), task)
    stored = next(
        (
            r
            for r in read_rows(Path(out_dir or default_out_dir(spec)) / "rows.csv")
            if r["row"] == row
        ),
        None,
    )
    same = None if stored is None else comparable(stored) == comparable(new)
    return {"row": new, "stored": stored, "same": same}
