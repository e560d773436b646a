"""Calibration: a step-time model fitted to public measurements of real serving engines.

:mod:`~napkin.calibration.terms` names the model's roofline basis terms,
:mod:`~napkin.calibration.basis` holds the model (a step's basis vector × fitted coefficients),
:mod:`~napkin.calibration.profile` the fitted profiles with provenance, domain and error bands,
:mod:`~napkin.calibration.measurements` the measurement records and a reader per file format.
Fitting and validation replay measurements through the simulator (:mod:`napkin.validation`).
"""
