"""Run the CLI in-process: ``cli(*args) -> (exit code, stdout, stderr)``."""

import sys
from collections.abc import Callable

import pytest

from napkin.cli.main import main


@pytest.fixture
def cli(monkeypatch, capsys) -> Callable[..., tuple[int, str, str]]:
    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["napkin", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        out, err = capsys.readouterr()
        return exit_info.value.code, out, err

    return run

