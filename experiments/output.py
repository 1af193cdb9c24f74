"""Evidence-honest result files: every report says ``hardware_io: false``."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np
from rob_twin.twin.scenario.report import EVIDENCE, markdown_table

__all__ = ["OUT_DIR", "markdown_table", "stamp", "write_experiment", "write_json"]

OUT_DIR = Path("out")


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def stamp(result: dict) -> dict:
    """Return ``result`` with the evidence fields and machine facts added (JSON-safe)."""
    out = dict(EVIDENCE)
    out.update(_jsonable(result))
    out["hardware_io"] = False
    out.setdefault("python", platform.python_version())
    out.setdefault("written_utc", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return out


def write_json(path: Path, result: dict) -> dict:
    """Stamp ``result`` and write it to ``path`` (parents created); return the stamped dict."""
    data = stamp(result)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    return data


def write_experiment(name: str, result: dict, table_md: str = "") -> dict:
    """Write ``out/experiments/NAME/result.json`` and ``report.md``; return the stamped result."""
    folder = OUT_DIR / "experiments" / name
    data = write_json(folder / "result.json", result)
    md = (
        f"# Experiment `{name}` (simulated)\n\nhardware_io: false. {EVIDENCE['note']}\n\n{table_md}"
    )
    (folder / "report.md").write_text(md)
    return data
