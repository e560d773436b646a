"""Inference analytics built on the accounting and timing layers."""
