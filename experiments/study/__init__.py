"""Collision studies at scale: a spec (``spec``) expands into seeded tasks (``tasks``), run
by one process, local worker processes or Ray (``backends``, ``worker``), streamed into a
resumable row table (``store``) and reported with plots (``report``). Entry points:
``load_spec``, ``run_study``, ``replay_row`` (``rob-twin study``).
"""

from __future__ import annotations

from controllers.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "experiments.study.backends": ("LocalBackend", "RayBackend"),
        "experiments.study.spec": ("StudySpec", "StudySpecError", "load_spec"),
        "experiments.study.runner": ("replay_row", "run_study"),
    },
)
