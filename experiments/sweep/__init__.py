"""Regression sweeps (``rob-twin sweep DIR``): every scenario of a folder run in parallel and
compared with its stored baseline (``runner``; what is compared and how: ``figures``)."""

from __future__ import annotations

from rob_twin.models.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__, {"rob_twin.experiments.sweep.runner": ("SweepInputError", "run_sweep")}
)
