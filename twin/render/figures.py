"""Figures written to disk: one matplotlib figure saved as a PNG, atomically."""

from __future__ import annotations

import os
from pathlib import Path


def save_png(fig, path: Path, dpi: int = 90) -> Path:
    """Save a matplotlib figure atomically (temporary file, then rename) and close it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)
    os.replace(tmp, path)
    return path
