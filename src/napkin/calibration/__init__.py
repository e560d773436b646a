"""Calibration: a step-time model fitted to public measurements of real serving engines.

:mod:`~napkin.calibration.basis` holds the model (roofline basis terms × fitted coefficients),
:mod:`~napkin.calibration.profile` the fitted profiles with provenance, domain and error bands,
:mod:`~napkin.calibration.measurements` the measurement records and their file formats.
Fitting and validation replay measurements through the simulator (:mod:`napkin.validation`).
"""
