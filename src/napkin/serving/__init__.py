"""Serving: workloads, arrival processes, traces, the fluid queue and the discrete-event engine."""
