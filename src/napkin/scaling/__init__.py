"""Scaling laws: the loss surface L(N, D), its fit and hold-out check, compute-optimal sizing."""
