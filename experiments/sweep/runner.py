"""Regression sweep: run every scenario of a folder (in parallel processes, no video),
compare each run's figures with its baseline (``DIR/baselines/NAME.json``), report what
changed. ``update=True`` writes the baselines instead (keeping their tolerances): it is the
one way a shipped baseline changes (``rob-twin sweep DIR --update-baselines``).

Every scenario runs on the simulated bus ``bus`` (default: its robot file's ``drives.bus``,
what ``rob-twin run`` uses: ROB classic CAN at 1 Mbit/s, OpenArm CAN FD 1/5 Mbit/s), so a
scenario that fails on its default bus fails the sweep.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import sys
import time
from pathlib import Path

from rob_twin.experiments.output import markdown_table, write_json
from rob_twin.experiments.sweep.figures import DEFAULT_TOLERANCE, compare, run_figures
from rob_twin.models.bounded_json import JsonLimits, read_bounded_json
from rob_twin.models.errors import RobTwinError
from tqdm import tqdm

DEFAULT_BUS = None  # the default of ``rob-twin run --bus``: the robot file's drives.bus
BASELINE_LIMITS = JsonLimits(max_bytes=4_000_000, max_depth=8, reject_duplicate_keys=True)


class SweepInputError(RobTwinError, ValueError):
    """A sweep folder that holds no scenarios (or does not exist)."""


def run_one(path: str, out_dir: str, bus: str | None = DEFAULT_BUS) -> dict:
    """Run scenario ``path`` headless (no video) on the simulated bus ``bus`` (a ``--bus``
    spec): {"name", "figures", "wall_s"} or {"error"}. The figures are those of the run's
    summary, judged against the scenario's ``expect`` like ``rob-twin run``."""
    from rob_twin.models.robot import robot_of
    from rob_twin.twin.bus.timing import parse_bus_spec
    from rob_twin.twin.scenario.report import summarize
    from rob_twin.twin.scenario.run import Scenario, run_scenario
    from rob_twin.twin.scenario.verdict import unexpected

    t0 = time.perf_counter()
    name = Path(path).stem
    try:
        sc = Scenario.load(path)
        name = sc.name
        spec = bus or robot_of(sc.robot).bus_spec
        result = run_scenario(
            sc,
            out_dir=Path(out_dir) / sc.name,
            record=False,
            progress=False,
            bus_timing=parse_bus_spec(spec),
        )
        problems = unexpected(result, sc.expect) if result.status == "completed" else []
        summary = summarize(  # the summary `rob-twin run` writes, keyframes reached included
            result,
            Path(out_dir) / sc.name,
            problems,
            expect=sc.expect.model_dump(),
            keyframes=sc.keyframes,
        )
        return {
            "name": name,
            "bus": spec,
            "figures": run_figures(summary),
            "wall_s": time.perf_counter() - t0,
        }
    except Exception as err:  # a scenario that cannot run is a regression, not a crash
        return {
            "name": name,
            "error": f"{type(err).__name__}: {err}",
            "wall_s": time.perf_counter() - t0,
        }


def scenario_files(folder: Path) -> list[Path]:
    """The scenario files of ``folder`` (``*.json``, JSON schemas left out)."""
    if not folder.is_dir():
        raise SweepInputError(
            f"sweep folder {str(folder)!r} does not exist; valid: a folder of scenario .json files"
        )
    files = sorted(f for f in folder.glob("*.json") if not f.name.endswith(".schema.json"))
    if not files:
        raise SweepInputError(
            f"sweep folder {str(folder)!r} holds no *.json scenario; "
            "valid: a folder of scenario files"
        )
    return files


def run_all(
    files: list[Path],
    out_dir: Path,
    workers: int | None,
    progress: bool,
    bus: str | None = DEFAULT_BUS,
) -> list[dict]:
    """Run the scenarios on bus ``bus``, ``workers`` at a time (1: in this process)."""
    from rob_twin.experiments.study.backends import default_workers

    workers = min(workers or default_workers(), len(files))
    bar = tqdm(
        total=len(files), unit="scenario", desc="sweep", disable=not progress, file=sys.stderr
    )
    results = []
    try:
        if workers <= 1:
            for f in files:
                results.append(run_one(str(f), str(out_dir), bus))
                bar.update(1)
        else:
            ctx = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                futures = {pool.submit(run_one, str(f), str(out_dir), bus): f for f in files}
                for fut in cf.as_completed(futures):
                    try:
                        results.append(fut.result())
                    except Exception as err:  # the worker process died
                        results.append(
                            {
                                "name": futures[fut].stem,
                                "error": f"worker died: {err}",
                                "wall_s": 0.0,
                            }
                        )
                    bar.update(1)
    finally:
        bar.close()
    return sorted(results, key=lambda r: r["name"])


def _baseline_path(baselines: Path, name: str) -> Path:
    return baselines / f"{name}.json"


def read_baseline(path: Path) -> dict | None:
    """The stored baseline at ``path`` (None when there is none); SweepInputError when it is
    not a baseline (bad JSON, over the limits, no ``figures`` object)."""
    if not path.is_file():
        return None
    stored = read_bounded_json(path.read_bytes(), f"baseline {str(path)!r}", BASELINE_LIMITS)
    if not (isinstance(stored, dict) and isinstance(stored.get("figures"), dict)):
        raise SweepInputError(
            f"baseline {str(path)!r} is not a baseline; valid: an object with a 'figures' "
            "object (write it with rob-twin sweep --update-baselines)"
        )
    return stored


def run_sweep(
    folder: Path,
    *,
    baselines: Path | None = None,
    out_dir: Path = Path("out/sweep"),
    workers: int | None = None,
    update: bool = False,
    progress: bool = True,
    bus: str | None = DEFAULT_BUS,
) -> dict:
    """Run every scenario on the simulated bus ``bus`` and compare (or ``update`` the
    baselines); return the stamped report (``passed``)."""
    from rob_twin.twin.bus.timing import parse_bus_spec

    if bus is not None:
        parse_bus_spec(bus)  # a bad spec: BusTimingConfigError before anything runs
    folder = Path(folder)
    baselines = Path(baselines or folder / "baselines")
    files = scenario_files(folder)
    t0 = time.perf_counter()
    results = run_all(files, out_dir, workers, progress, bus)
    wall_s = time.perf_counter() - t0
    rows, changes = [], []
    for r in results:
        path = _baseline_path(baselines, r["name"])
        stored = read_baseline(path)
        if "error" in r:
            verdict, n_changed = "RUN FAILED", 1
            changes.append(
                {
                    "scenario": r["name"],
                    "figure": "(run)",
                    "baseline": "ran",
                    "now": r["error"],
                    "allowed": "exact",
                }
            )
        elif update:
            tolerances = (stored or {}).get("tolerances", {"default": DEFAULT_TOLERANCE})
            write_json(
                path,
                {
                    "scenario": r["name"],
                    "bus": r.get("bus", bus),
                    "tolerances": tolerances,
                    "figures": r["figures"],
                },
            )
            verdict, n_changed = "baseline written", 0
        elif stored is None:
            verdict, n_changed = "NO BASELINE", 1
            changes.append(
                {
                    "scenario": r["name"],
                    "figure": "(baseline)",
                    "baseline": "(absent)",
                    "now": f"run --update-baselines to write {path}",
                    "allowed": "exact",
                }
            )
        else:
            diff = compare(stored["figures"], r["figures"], stored.get("tolerances", {}))
            changes += [{"scenario": r["name"], **d} for d in diff]
            verdict, n_changed = ("REGRESSION" if diff else "ok"), len(diff)
        rows.append(
            {
                "scenario": r["name"],
                "figures": len(r.get("figures", {})),
                "changed": n_changed,
                "wall_s": round(r["wall_s"], 2),
                "verdict": verdict,
            }
        )
    passed = not changes
    table_md = markdown_table(rows) + (
        "\nWhat changed:\n\n"
        + markdown_table(changes, ["scenario", "figure", "baseline", "now", "allowed"])
        if changes
        else ""
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "sweep.md"
    md.write_text(f"# Sweep of `{folder}` (simulated)\n\nhardware_io: false.\n\n{table_md}")
    return write_json(
        out_dir / "sweep.json",
        {
            "folder": str(folder),
            "baselines": str(baselines),
            "scenarios": len(results),
            "workers": workers,
            "bus": bus or "each scenario's robot file's drives.bus",
            "wall_s": round(wall_s, 3),
            "passed": passed,
            "verdict": "PASS" if passed else "REGRESSION",
            "updated": update,
            "rows": rows,
            "changes": changes,
            "table_md": table_md,
            "report": str(md),
        },
    )
