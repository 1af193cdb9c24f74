"""The layers import only downwards, under the one import name ``rob_twin``.

models (description: the error root, names, motor tables, dimensions; builder and loaders)
-> controllers -> planners -> twin -> experiments -> cli. Two checks: each import runs in a
fresh interpreter and the test asserts which layers stay out of ``sys.modules``; and every
import statement of every module (those inside functions too) is read from the source and
held against the rules, so a lazy import cannot hide an upward edge.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("models", "controllers", "planners", "twin", "experiments", "cli")
GENERIC_NAMES = ("models", "controllers", "planners", "twin", "experiments", "cli")

# What each layer may import of the project (itself included) and of the heavy libraries.
MAY_IMPORT = {layer: set(LAYERS[: i + 1]) for i, layer in enumerate(LAYERS)}
NEVER = {
    "controllers": {"mujoco", "pinocchio", "dm_control"},
    "planners": {"dm_control"},
}
# models' pure-data modules: controllers may import them, so they never load mujoco.
PURE_MODELS = ("names", "errors", "dimensions", "poses", "damiao_motors", "lazy_exports")
UP = {"mujoco", "pinocchio", "controllers", "planners", "twin", "experiments", "cli"}

CASES = [
    ("import " + ", ".join(f"rob_twin.models.{m}" for m in PURE_MODELS), UP),
    ("import rob_twin.models", UP),
    ("import rob_twin.models.loading, rob_twin.models.build", UP - {"mujoco", "pinocchio"}),
    ("import rob_twin.controllers", UP - {"controllers"}),
    (
        "from rob_twin.controllers import ArmOwner, CanTransport, SyncExecutor, ArmTarget, "
        "CodecConfig",
        UP - {"controllers"},
    ),
    (
        "import rob_twin.controllers.owner, rob_twin.controllers.owner_config, "
        "rob_twin.controllers.owner_types, rob_twin.controllers.owner_supervision, "
        "rob_twin.controllers.owner_realtime, rob_twin.controllers.codec, "
        "rob_twin.controllers.executor, rob_twin.controllers.transport",
        UP - {"controllers"},
    ),
    (
        "import rob_twin.planners; from rob_twin.planners import ArmGroup, JointGoal, PoseGoal",
        {"twin", "experiments", "cli"},
    ),
    ("import rob_twin.twin", {"mujoco", "experiments", "cli"}),
    (
        "from rob_twin.twin import Twin, ClosedLoop, run_scenario, rehearse\n"
        "import rob_twin.twin.viewer.session, rob_twin.twin.teleop.app, rob_twin.twin.env",
        {"experiments", "cli"},
    ),
    ("import rob_twin.experiments.registry, rob_twin.experiments.study", {"cli"}),
]


def _layer_of(path: Path) -> str:
    return path.relative_to(ROOT).parts[0]


def _project_modules() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (ROOT / layer).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every import in ``path``, function bodies included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            out.append((node.lineno, node.module or ""))
    return out


def test_every_import_in_the_source_points_down():
    bad = []
    for path in _project_modules():
        layer = _layer_of(path)
        for line, name in _imports(path):
            parts = name.split(".")
            where = f"{path.relative_to(ROOT)}:{line} imports {name}"
            if parts[0] in GENERIC_NAMES:
                bad.append(f"{where} (a generic top-level name: use rob_twin.{name})")
            elif parts[0] == "rob_twin":
                target = parts[1] if len(parts) > 1 else ""
                if target not in MAY_IMPORT[layer]:
                    bad.append(f"{where} (layer {layer} may import {sorted(MAY_IMPORT[layer])})")
                if layer == "controllers" and target == "models":
                    if len(parts) < 3 or parts[2] not in PURE_MODELS:
                        bad.append(f"{where} (controllers read only {PURE_MODELS} of models)")
            elif parts[0] in NEVER.get(layer, ()):
                bad.append(f"{where} (never in {layer})")
            elif layer == "models" and parts[0] in ("mujoco", "pinocchio"):
                if path.stem not in ("build", "loading", "robot_model", "robot"):
                    bad.append(f"{where} (mujoco only in the builder and loaders)")
    assert bad == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(["rob_twin", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _module_level_imports(path: Path) -> set[str]:
    """Modules ``path`` imports when it is imported: its top-level statements (inside
    if/try/with too), not ``if TYPE_CHECKING:`` blocks nor function bodies; ``from a import
    b`` counts ``a`` and ``a.b``."""
    out: set[str] = set()

    def visit(body) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, (ast.If, ast.With)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
            elif isinstance(node, ast.Try):
                visit(node.body + node.orelse + node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                out.add(node.module or "")
                out.update(f"{node.module}.{a.name}" for a in node.names)

    visit(ast.parse(path.read_text()).body)
    return out


@pytest.mark.parametrize("layer", ["models", "controllers", "planners", "experiments", "cli"])
def test_no_module_level_import_cycle(layer):
    """Within the layer, the modules imported at import time (a package's ``__init__``
    included: importing ``a.b.c`` runs ``a``, ``a.b`` and ``a.b.c``) form no cycle."""
    modules = {_module_name(p): p for p in (ROOT / layer).rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for imported in _module_level_imports(path):
            parts = imported.split(".")
            deps |= {".".join(parts[:k]) for k in range(2, len(parts) + 1)}
        graph[name] = sorted((deps & modules.keys()) - {name})

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo += graph[m]
        return False

    assert [m for m in sorted(graph) if reaches(m, m)] == []


def test_the_install_puts_only_rob_twin_on_the_path(tmp_path):
    code = (
        "import importlib.util, json\n"
        f"names = {list(GENERIC_NAMES)!r}\n"
        "print(json.dumps([n for n in names if importlib.util.find_spec(n) is not None]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []
    found = subprocess.run(
        [sys.executable, "-c", "import rob_twin.planners as p; print(p.__name__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == "rob_twin.planners"


def test_pyproject_lists_every_package_folder_of_the_tree():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    tree = sorted(
        "rob_twin." + ".".join(p.parent.relative_to(ROOT).parts)
        for layer in LAYERS
        for p in (ROOT / layer).rglob("__init__.py")
    )
    assert sorted(config["packages"]) == tree
    assert config["package-dir"] == {f"rob_twin.{layer}": layer for layer in LAYERS}


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
        "import sys, rob_twin.cli.main\n"
        "before = 'rob_twin.experiments' in sys.modules\n"
        "rob_twin.cli.main.main(['experiment', '--list'])\n"
        "print(before, 'rob_twin.experiments.registry' in sys.modules)"
    )
    assert _last_line(code) == "False True"


def test_every_error_the_project_defines_derives_from_the_one_base():
    code = (
        "import importlib, inspect, json, pkgutil\n"
        "from rob_twin.models.errors import RobTwinError\n"
        "bad = []\n"
        "for pkg in ('controllers', 'models', 'planners', 'twin', 'cli'):\n"
        "    root = importlib.import_module('rob_twin.' + pkg)\n"
        "    for info in pkgutil.walk_packages(root.__path__, prefix=root.__name__ + '.'):\n"
        "        if info.name.endswith('__main__'):\n"
        "            continue\n"
        "        mod = importlib.import_module(info.name)\n"
        "        for name, cls in inspect.getmembers(mod, inspect.isclass):\n"
        "            if (cls.__module__ == mod.__name__ and issubclass(cls, BaseException)\n"
        "                    and not name.startswith('_') and not issubclass(cls, RobTwinError)\n"
        "                    and not issubclass(cls, Warning)):\n"
        "                bad.append(f'{mod.__name__}.{name}')\n"
        "print(json.dumps(bad))"
    )
    assert json.loads(_last_line(code)) == []


def test_entry_points_export_what_they_list_and_name_the_choices_for_anything_else():
    from rob_twin import controllers, models, planners, twin

    for package in (controllers, models, planners, twin):
        assert package.__all__ == sorted(package.__all__) and dir(package) == package.__all__
        for name in package.__all__:
            assert getattr(package, name) is not None
    with pytest.raises(
        AttributeError, match="no attribute 'ArmOwnr'; its public names: .*ArmOwner"
    ):
        controllers.ArmOwnr  # noqa: B018
