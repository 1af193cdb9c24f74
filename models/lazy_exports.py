"""Lazy package entry points: a package names its public objects and the module each lives
in; the module is imported on first use of the name (PEP 562 ``__getattr__``), so importing
the package itself stays light (``import controllers`` loads no ruckig, ``import twin`` no
mujoco until a name is used)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(
    package: str, modules: dict[str, tuple[str, ...]]
) -> tuple[list[str], Callable, Callable]:
    """``(__all__, __getattr__, __dir__)`` for ``package``: ``modules`` maps each module to the
    public names it provides."""
    exports = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str):
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}; "
                f"its public names: {', '.join(sorted(exports))}"
            ) from None
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return sorted(exports), __getattr__, __dir__
