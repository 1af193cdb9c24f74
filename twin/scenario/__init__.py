"""Scenarios: the file schema, running one (keyframes, plan steps, base steps), the verdict,
the run folder and its summaries, and the crossing demo."""
