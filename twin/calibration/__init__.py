"""Fitting the twin to a real robot's recordings: parameters, calibration files,
predictions of a recording (``rob_twin.twin.calibration``)."""
