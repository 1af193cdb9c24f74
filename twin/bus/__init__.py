"""The simulated CAN buses: frame bits and timing, the timed bus, load budgets and plots, the
host's end with wire faults, recording and replay, socketcand, and the bank and host processes."""
