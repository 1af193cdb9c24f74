"""Pre-commissioning rehearsal: the gates the seeds list before real motors are streamed.

Each gate builds fresh closed loops (``rob_twin.twin.sim.closed_loop``) from one base configuration,
provokes what it must check, and returns a verdict with measured figures (simulated
seconds, radians). A base configuration carrying a wiring or installation fault
(swapped buses, a wrong sign, a second writer) must make the matching gate fail:
the tests prove each gate can fail. Nothing here touches hardware (hardware_io: false).

Gates (seed 000 "Integration requirement", seed 001 section 4):
exclusive_output, units_and_references, stopping, feedback, output_uncertainty,
moving_retargets, bus_budget, held_object (both hands carry a box: ``held_gate``).
"""

from rob_twin.twin.rehearsal.gates import (
    ARMS,
    FAR_MOVE,
    GATES,
    SIGNATURE_MOVE,
    GateResult,
    RehearsalConfig,
    default_config,
    gate_exclusive_output,
    gate_feedback,
    gate_moving_retargets,
    gate_output_uncertainty,
    gate_stopping,
    gate_units_and_references,
    gates_for,
)
from rob_twin.twin.rehearsal.report import stop_plot, write_report
from rob_twin.twin.rehearsal.run import rehearse
from rob_twin.twin.rehearsal.targets import HOME, wave_source

__all__ = [
    "ARMS",
    "FAR_MOVE",
    "GATES",
    "HOME",
    "SIGNATURE_MOVE",
    "GateResult",
    "RehearsalConfig",
    "default_config",
    "gate_exclusive_output",
    "gate_feedback",
    "gate_moving_retargets",
    "gate_output_uncertainty",
    "gate_stopping",
    "gate_units_and_references",
    "gates_for",
    "rehearse",
    "stop_plot",
    "wave_source",
    "write_report",
]
