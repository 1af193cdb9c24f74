"""Regression sweeps (``rob-twin sweep DIR``): every scenario of a folder run in parallel and
compared with its stored baseline (``runner``; what is compared and how: ``figures``)."""

from experiments.sweep.runner import SweepInputError, run_sweep

__all__ = ["SweepInputError", "run_sweep"]
