"""Lazy package entry points: a package names its public objects and the module each lives
in; the module is imported on first use of the name (PEP 562 ``__getattr__``), so importing
the package itself stays light (``import controllers`` loads no ruckig, ``import twin`` no
mujoco until a name is used)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package`` whose public names map to their modules."""

    def __getattr__(name: str):
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}; "
                                 f"its public names: {', '.join(sorted(exports))}") from None
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
