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


PLAIN_MEASUREMENTS = """backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,\
mean_ttft_ms,mean_tpot_ms
vllm,llama-3.1-8b,h100-sxm,bf16,1,512,32,closed_loop,2,60,7.5
vllm,llama-3.1-8b,h100-sxm,bf16,1,512,32,closed_loop,8,90,9.0
vllm,llama-3.1-8b,h100-sxm,bf16,2,512,32,closed_loop,2,55,5.5
vllm,llama-3.1-8b,h100-sxm,bf16,2,512,32,closed_loop,8,80,6.5
"""


@pytest.fixture
def plain(tmp_path) -> str:
    """Path of a four-row plain measurement CSV (Llama-3.1-8B on H100, TP 1-2, 2 and 8
    clients) for the calibrate / validate tests."""
    path = tmp_path / "m.csv"
    path.write_text(PLAIN_MEASUREMENTS)
    return str(path)
