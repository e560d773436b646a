"""Measurements of real serving engines, as napkin replays them, and the files they come in.

:mod:`~napkin.calibration.measurements.records` holds the types (a measurement, its harness and
its launch flags); :mod:`~napkin.calibration.measurements.fields` the field checks and file
reading the readers share; :mod:`~napkin.calibration.measurements.catalog_ids` the mapping of
benchmark names to catalog ids. One reader per file format:
:mod:`~napkin.calibration.measurements.aiconfigurator` (aiconfigurator's silicon CSV),
:mod:`~napkin.calibration.measurements.vllm_bench` (``vllm bench serve`` JSON),
:mod:`~napkin.calibration.measurements.guidellm` (guidellm report JSON),
:mod:`~napkin.calibration.measurements.plain_csv` (napkin's plain CSV) and
:mod:`~napkin.calibration.measurements.splitwise` (splitwise-sim's perf model);
:func:`~napkin.calibration.measurements.read.read_measurements` picks one by content.
"""
