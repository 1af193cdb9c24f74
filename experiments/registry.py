"""Experiments and benchmarks register themselves here by name.

An experiment is a function ``run(seed: int) -> dict`` whose dict is the JSON result;
``rob_twin.experiments.output.write_experiment`` adds the evidence fields and writes the files
under ``out/``. Benchmarks are functions ``run() -> dict`` written to ``out/bench/NAME.json``.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Callable

from rob_twin.models.errors import RobTwinError, UnknownNameError

ExperimentFn = Callable[..., dict]


class DuplicateRegistrationError(RobTwinError, ValueError):
    """Two different functions registered under one experiment name."""

    def __init__(self, name: str, first: Callable, second: Callable):
        self.name = name
        super().__init__(
            f"experiment {name!r} is registered twice ({first.__module__}."
            f"{first.__qualname__} and {second.__module__}.{second.__qualname__}); "
            "valid: one function per name"
        )


_EXPERIMENTS: dict[str, ExperimentFn] = {}
_BENCHMARKS: dict[str, Callable[[], dict]] = {}
_loaded = False


def experiment(name: str):
    """Decorator: register ``fn`` as experiment ``name`` (``rob-twin experiment NAME``)."""

    def wrap(fn: ExperimentFn) -> ExperimentFn:
        if name in _EXPERIMENTS and _EXPERIMENTS[name] is not fn:
            raise DuplicateRegistrationError(name, _EXPERIMENTS[name], fn)
        _EXPERIMENTS[name] = fn
        return fn

    return wrap


def benchmark(name: str):
    """Decorator: register ``fn`` as benchmark ``name`` (``make bench`` -> out/bench/NAME.json)."""

    def wrap(fn):
        _BENCHMARKS[name] = fn
        return fn

    return wrap


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    import rob_twin.experiments as package

    for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
        if info.name.rsplit(".", 1)[-1].startswith(("exp_", "bench_")):
            importlib.import_module(info.name)
    _loaded = True


def experiment_names() -> list[str]:
    _load_all()
    return sorted(_EXPERIMENTS)


_PREFIX = re.compile(
    r"^(the\s+)?(experiment\s+)?(``)?[\w-]+(``)?(\s+experiment)?(\s+\([^)]*\))?\s*:\s*", re.I
)


def experiment_summary(name: str) -> str:
    """One line saying what experiment ``name`` shows: the first sentence of its module's
    docstring without the "Experiment ``name``:" prefix (``rob-twin experiment --list``)."""
    fn = get_experiment(name)
    doc = sys.modules[fn.__module__].__doc__ or fn.__doc__ or ""
    first = " ".join(doc.strip().split("\n\n", 1)[0].split())
    first = _PREFIX.sub("", first).replace("``", "")
    first = re.split(r"(?<=[a-z0-9)])\. ", first, maxsplit=1)[0].rstrip(".")
    return (first[:1].upper() + first[1:]) if first else "(no description)"


def get_experiment(name: str) -> ExperimentFn:
    _load_all()
    if name not in _EXPERIMENTS:
        raise UnknownNameError("experiment", name, sorted(_EXPERIMENTS))
    return _EXPERIMENTS[name]


def benchmarks() -> dict[str, Callable[[], dict]]:
    _load_all()
    return dict(sorted(_BENCHMARKS.items()))
