"""Replaying measurements through the simulator: calibration fits and validation reports."""
