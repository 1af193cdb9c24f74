"""Collision studies at scale: a spec (``spec``) expands into seeded tasks (``tasks``), run
by one process, local worker processes or Ray (``backends``, ``worker``), streamed into a
resumable row table (``store``) and reported with plots (``report``). Entry points:
``load_spec``, ``run_study``, ``replay_row`` (``rob-twin study``).
"""

from __future__ import annotations

import importlib

__all__ = [
    "LocalBackend",
    "RayBackend",
    "StudySpec",
    "StudySpecError",
    "load_spec",
    "replay_row",
    "run_study",
]

_WHERE = {
    "LocalBackend": "backends",
    "RayBackend": "backends",
    "StudySpec": "spec",
    "StudySpecError": "spec",
    "load_spec": "spec",
    "replay_row": "runner",
    "run_study": "runner",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}; its public names: {', '.join(__all__)}"
        )
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return list(__all__)
