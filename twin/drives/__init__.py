"""Simulated drives and motor banks: Amber position drives and their bank, Damiao MIT drives
and their bank, gravity compensation for torque-driven arms."""
