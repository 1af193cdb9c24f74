"""The layers import only downwards: each import runs in a fresh interpreter and the test
asserts which top-level packages stay out of ``sys.modules``.

models (pure data) / controllers -> planners -> twin -> experiments; ``rob_twin.twin.cli`` reaches
``experiments`` only through the registry, when an experiment is run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("import rob_twin.controllers", {"mujoco", "pinocchio", "planners", "twin", "experiments"}),
    (
        "from rob_twin.controllers import ArmOwner, CanTransport, SyncExecutor, ArmTarget, "
        "CodecConfig",
        {"mujoco", "pinocchio", "planners", "twin", "experiments"},
    ),
    (
        "import rob_twin.controllers.owner, rob_twin.controllers.codec, "
        "rob_twin.controllers.executor, rob_twin.controllers.transport",
        {"mujoco", "pinocchio", "planners", "twin", "experiments"},
    ),
    (
        "import rob_twin.models.dimensions, rob_twin.models.poses",
        {"mujoco", "pinocchio", "planners", "twin", "experiments"},
    ),
    ("import rob_twin.models.loading, rob_twin.models.build", {"planners", "twin", "experiments"}),
    (
        "import rob_twin.planners; from rob_twin.planners import ArmGroup, JointGoal, PoseGoal",
        {"twin", "experiments"},
    ),
    ("import rob_twin.twin", {"mujoco", "experiments"}),
    (
        "from rob_twin.twin import Twin, ClosedLoop, run_scenario, rehearse; import "
        "rob_twin.twin.cli, rob_twin.twin.viewer",
        {"experiments"},
    ),
]


def _last_line(code: str) -> str:
    """The last line ``code`` prints when run in a fresh interpreter from the repo root."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def _loaded_after(statement: str) -> set[str]:
    code = (
        f"import json, sys\n{statement}\n"
        "parts = [m.split('.') for m in sys.modules]\n"
        "print(json.dumps(sorted({p[1] if p[0] == 'rob_twin' and len(p) > 1 else p[0] "
        "for p in parts})))"
    )
    return set(json.loads(_last_line(code)))


@pytest.mark.parametrize(("statement", "kept_out"), CASES, ids=[c[0] for c in CASES])
def test_layer_keeps_upper_layers_out(statement, kept_out):
    assert _loaded_after(statement) & kept_out == set()


def test_cli_reaches_experiments_only_through_the_registry():
    code = (
        "import sys, rob_twin.twin.cli\n"
        "before = 'rob_twin.experiments' in sys.modules\n"
        "rob_twin.twin.cli.main(['experiment', '--list'])\n"
        "print(before, 'rob_twin.experiments.registry' in sys.modules)"
    )
    assert _last_line(code) == "False True"


def test_every_error_the_project_defines_derives_from_the_one_base():
    code = (
        "import importlib, inspect, json, pkgutil\n"
        "from rob_twin.controllers.errors import RobTwinError\n"
        "bad = []\n"
        "for pkg in ('controllers', 'models', 'planners', 'twin'):\n"
        "    root = importlib.import_module('rob_twin.' + pkg)\n"
        "    for info in pkgutil.walk_packages(root.__path__, prefix=root.__name__ + '.'):\n"
        "        mod = importlib.import_module(info.name)\n"
        "        for name, cls in inspect.getmembers(mod, inspect.isclass):\n"
        "            if (cls.__module__ == mod.__name__ and issubclass(cls, BaseException)\n"
        "                    and not name.startswith('_') and not issubclass(cls, RobTwinError)):\n"
        "                bad.append(f'{mod.__name__}.{name}')\n"
        "print(json.dumps(bad))"
    )
    assert json.loads(_last_line(code)) == []


def test_entry_points_export_what_they_list_and_name_the_choices_for_anything_else():
    from rob_twin import controllers, models, twin

    for package in (controllers, models, twin):
        assert package.__all__ == sorted(package.__all__) and dir(package) == package.__all__
        for name in package.__all__:
            assert getattr(package, name) is not None
    with pytest.raises(
        AttributeError, match="no attribute 'ArmOwnr'; its public names: .*ArmOwner"
    ):
        controllers.ArmOwnr  # noqa: B018
