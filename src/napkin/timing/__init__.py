"""Timing: seconds from the accounting layer's FLOPs and bytes, by the roofline.

``time = max(FLOPs / (peak·MFU), bytes / (bandwidth·MBU)) + overhead``. Peak is the dense
tensor-core rate of the weight format's compute precision. MFU and MBU default to 1: the result
is then the roofline *ceiling* (the chapter's "physical limit"); real engines reach roughly
0.4–0.6 MFU in prefill and 0.5–0.85 MBU in decode (question bank, task 2).

By concept: :mod:`~napkin.timing.efficiency` (MFU, MBU and the overhead),
:mod:`~napkin.timing.roofline` (one call's time; a model on one accelerator),
:mod:`~napkin.timing.series` (runs of steps summed in closed form), :mod:`~napkin.timing.steps`
(an engine's steps by the roofline), :mod:`~napkin.timing.comm` and
:mod:`~napkin.timing.layout` (a parallel layout's communication and its steps).
"""
