"""The owner tests' fakes (no tests here): the one rig lives in experiments/owner_rig.py."""

from __future__ import annotations

from rob_twin.experiments.owner_rig import RecordingPublisher, Rig, held_tick_stop_race

__all__ = ["RecordingPublisher", "Rig", "held_tick_stop_race"]
