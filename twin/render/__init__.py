"""Offscreen rendering: video recording, render quality presets, captions."""
