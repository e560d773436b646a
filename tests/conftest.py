"""Shared fixtures: catalog specs loaded once; the CLI run in-process:
``cli(*args) -> (exit code, stdout, stderr)``."""

import sys
from collections.abc import Callable

import pytest

from napkin.catalog import load_accelerator, load_model
from napkin.cli.main import main
from napkin.specs.model import ModelSpec


@pytest.fixture(scope="session")
def qwen3_8b() -> ModelSpec:
    return load_model("qwen3-8b")


@pytest.fixture(scope="session")
def h100():
    return load_accelerator("h100-sxm")


@pytest.fixture
def cli(monkeypatch, capsys) -> Callable[..., tuple[int, str, str]]:
    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["napkin", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        out, err = capsys.readouterr()
        return exit_info.value.code, out, err

    return run
