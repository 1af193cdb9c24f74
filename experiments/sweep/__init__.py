"""Regression sweeps (``rob-twin sweep DIR``): every scenario of a folder run in parallel and
compared with its stored baseline (``runner``; what is compared and how: ``figures``)."""

from __future__ import annotations

import importlib

__all__ = ["SweepInputError", "run_sweep"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}; its public names: {', '.join(__all__)}"
        )
    return getattr(importlib.import_module(f"{__name__}.runner"), name)


def __dir__() -> list[str]:
    return list(__all__)
