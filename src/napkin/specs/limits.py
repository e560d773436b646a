"""Bounds of counts that allocate, shared by the readers of every layer that takes them."""

MAX_CLIENTS = 100_000
"""Most clients of a closed loop (each is a live request the simulator holds): a workload's
``arrivals.clients`` and a measurement file's closed-loop ``load``."""
