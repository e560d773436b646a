"""Specs: frozen descriptions of models, accelerators and number formats."""
