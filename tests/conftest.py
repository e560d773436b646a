"""Shared fixtures: catalog specs loaded once."""

import pytest

from napkin.catalog import load_accelerator, load_model
from napkin.specs.model import ModelSpec


@pytest.fixture(scope="session")
def qwen3_8b() -> ModelSpec:
    return load_model("qwen3-8b")


@pytest.fixture(scope="session")
def h100():
    return load_accelerator("h100-sxm")
