"""Collision studies at scale: a spec (``spec``) expands into seeded tasks (``tasks``), run
by one process, local worker processes or Ray (``backends``, ``worker``), streamed into a
resumable row table (``store``) and reported with plots (``report``). Entry points:
``load_spec``, ``run_study``, ``replay_row`` (``rob-twin study``).
"""

from __future__ import annotations

from rob_twin.models.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "rob_twin.experiments.study.backends": ("LocalBackend", "RayBackend"),
        "rob_twin.experiments.study.spec": ("StudySpec", "StudySpecError", "load_spec"),
        "rob_twin.experiments.study.runner": ("replay_row", "run_study"),
    },
)
