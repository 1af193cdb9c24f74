"""A picture of the simulated buses: latency histograms and load per bus (PNG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def bus_plot(report: dict, latencies_s: dict, path: Path, title: str = "") -> Path:
    """Per bus: histograms of queueing, command-to-drive and feedback latency [us], with
    the bus load and p99s in the panel title. ``report``/``latencies_s``: as from
    ``BusTimingLayer.report()`` / ``latencies()``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buses = list(report)
    fig, axes = plt.subplots(
        1, max(1, len(buses)), figsize=(6 * max(1, len(buses)), 3.8), squeeze=False
    )
    for ax, bus in zip(axes[0], buses, strict=False):
        rep, lat = report[bus], latencies_s.get(bus, {})
        for key, label in (
            ("queue", "queueing"),
            ("command_to_drive", "command -> drive"),
            ("feedback", "feedback -> host"),
        ):
            v = np.asarray(lat.get(key, ())) * 1e6
            if v.size:
                ax.hist(v, bins=60, histtype="step", lw=1.5, label=f"{label} (n={v.size})")
        c = rep["command_to_drive_latency"]
        ax.set_title(
            f"{bus}, {rep['config']}: load {100 * rep['load']:.1f} %\n"
            f"command->drive p50 {c['p50_us']} us, p99 {c['p99_us']} us, "
            f"lost {rep['frames_lost']}",
            fontsize=9,
        )
        ax.set_xlabel("latency [us] (simulated)")
        ax.set_ylabel("frames")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(title or "Simulated CAN buses (hardware_io: false)", fontsize=10)
    fig.tight_layout()
    from rob_twin.twin.render.figures import save_png

    save_png(fig, path, dpi=90)
    return path
