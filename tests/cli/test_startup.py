"""A cold ``napkin serve simulate`` loads only what simulating and reporting need: not the
other domains (one-call inference, planning, training), not the sweep/fluid/demand views, not
calibration profiles for a roofline scenario, not plotting or table libraries (``rich``: the
JSON output needs none), not ``html`` (only the HTML view escapes), and pydantic does not scan
every installed package for plugins unless the user asks; ``napkin --version`` loads no command
at all."""

import ast
import json
import os
import subprocess
import sys

import pytest

SCENARIO = """name: startup
model: llama-2-7b
gpu: h100-sxm
calibration: roofline
workload:
  seed: 1
  classes:
    chat:
      input_tokens: {dist: uniform, low: 512, high: 512}
      output_tokens: {dist: uniform, low: 8, high: 8}
  arrivals: {kind: poisson, rate_per_s: 5, num_requests: 3}
"""

PROBE = """import contextlib, io, json, os, sys
from napkin.cli.main import main
sys.argv = ["napkin", *sys.argv[1:], "--format", "json"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules),
                  "plugins": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}))
"""
"""A command line (the arguments after the script) run in-process with ``--format json``: its
status, output, the modules loaded and the pydantic plugin setting it ran under."""

NOT_NEEDED = ("napkin.inference", "napkin.planning", "napkin.training", "napkin.reinforcement",
              "napkin.scaling", "napkin.agents", "napkin.web", "napkin.serving.sweep",
              "napkin.serving.fluid", "napkin.serving.demand", "napkin.calibration.profile",
              "napkin.calibration.protocol", "napkin.calibration.measurements", "rich",
              "matplotlib", "pandas", "pyarrow", "scipy", "html")


def test_serve_simulate_imports_only_what_it_uses(tmp_path):
    path = tmp_path / "startup.yaml"
    path.write_text(SCENARIO)
    probe = subprocess.run([sys.executable, "-c", PROBE, "serve", "simulate", str(path)],
                           check=True, capture_output=True, text=True)
    result = json.loads(probe.stdout)
    assert result["code"] == 0
    summary = json.loads(result["out"])["scenarios"][0]["summary"]
    assert summary["requests"] == 3  # it did simulate
    loaded = [m for m in result["modules"] if m.startswith(NOT_NEEDED)]
    assert loaded == []
    assert result["plugins"] == "__all__"  # no scan of every package's entry points


@pytest.mark.parametrize("args", [
    ("call", "llama-2-7b", "--new", "512", "--gpu", "h100-sxm"),
    ("decode", "llama-2-7b", "--gpu", "h100-sxm", "--context", "1000"),
    ("capacity", "llama-2-7b", "--gpu", "h100-sxm"),
    ("train", "llama-2-7b", "--gpu", "h100-sxm"),
    ("rl", "llama-2-7b"),
    ("call", "deepseek-v3", "--new", "512", "--gpu", "h100-sxm"),  # experts, one rank
])
def test_the_calculators_load_neither_numpy_nor_the_simulator(args):
    """The one-call calculators need no arrays: numpy (~50 ms of a run's start on the 2-core
    machine) loads only with experts split over ranks (expert routing's distributions), the
    simulator only where a command simulates (``rl --gpu``)."""
    probe = subprocess.run([sys.executable, "-c", PROBE, *args], check=True,
                           capture_output=True, text=True)
    result = json.loads(probe.stdout)
    assert result["code"] == 0
    assert json.loads(result["out"])  # it did compute
    loaded = [m for m in result["modules"] if m.startswith(("numpy", "napkin.serving"))]
    assert loaded == []


def test_experts_over_ranks_still_load_their_routing():
    """The routing distributions load where they are needed: a MoE layer's experts split over
    expert-parallel ranks (the lazy imports resolve)."""
    from napkin.accounting.ranks import busiest_rank

    load, touched = busiest_rank(8, 2, 2, 1)
    # one token, top-2 of 8 experts on 2 ranks of 4: the busiest rank holds both picks with
    # probability 2·C(4,2)/C(8,2) = 12/28, else one each: E[max] = 2·12/28 + 1·16/28 = 40/28;
    # the most experts one rank touches is the same count here (both picks on one rank or
    # one each); the estimates are documented a few per cent off at one token
    assert load == pytest.approx(40 / 28, rel=0.035)
    assert touched == pytest.approx(40 / 28, rel=0.035)


def test_a_users_pydantic_plugin_setting_wins(tmp_path):
    path = tmp_path / "startup.yaml"
    path.write_text(SCENARIO)
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "logfire"}
    probe = subprocess.run([sys.executable, "-c", PROBE, "serve", "simulate", str(path)],
                           check=True, capture_output=True, text=True, env=env)
    assert json.loads(probe.stdout)["plugins"] == "logfire"


def test_version_builds_no_command(cli):
    from napkin import __version__

    assert cli("--version") == (0, f"napkin {__version__}\n", "")
    probe = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom napkin.cli.main import main\n"
         "sys.argv = ['napkin', '--version']\ntry:\n    main()\nexcept SystemExit:\n"
         "    print(sorted(sys.modules))"], check=True, capture_output=True, text=True)
    version, modules = probe.stdout.splitlines()
    assert version == f"napkin {__version__}"
    heavy = ("napkin.cli.serve_cmds", "napkin.api", "numpy", "pydantic")
    loaded = [m for m in ast.literal_eval(modules) if m.startswith(heavy)]
    assert loaded == ["pydantic.plugin._loader"]  # napkin's stand-in, not pydantic itself


RUN = """import atexit, gc, json, os, sys
from napkin.cli.main import run
sys.argv = ["napkin", *sys.argv[1:]]
atexit.register(lambda: print(json.dumps({"gc": gc.isenabled(), "frozen": gc.get_freeze_count(),
    "metadata": "importlib.metadata" in sys.modules, "numpy": "numpy" in sys.modules,
    "blas": os.environ.get("OPENBLAS_NUM_THREADS"),
    "threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task")
    else None}), file=sys.stderr))
run()
"""
"""The console script (``napkin = napkin.cli.main:run``) in a fresh interpreter; an exit
handler registered before it reports the collector and the modules as the process ends."""


def _console(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True,
                          env=env)


def test_the_console_script_is_run():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"napkin": "napkin.cli.main:run"}


def test_the_console_script_prints_what_main_prints_and_leaves_with_its_status(tmp_path, cli):
    path = tmp_path / "startup.yaml"
    path.write_text(SCENARIO)
    done = _console("serve", "simulate", str(path), "--format", "json")
    assert done.returncode == 0
    code, out, _ = cli("serve", "simulate", str(path), "--format", "json")
    assert (code, json.loads(done.stdout)) == (0, json.loads(out))  # every byte flushed
    # the exit handlers ran; the collector, paused through start-up, is back on with
    # start-up's objects frozen; pydantic's plugin loader never imported importlib.metadata
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["gc"] is True and report["frozen"] > 10_000
    assert report["metadata"] is False
    # numpy loaded with one BLAS thread: the process runs on its own thread alone (OpenBLAS
    # would otherwise have started one a core)
    assert report["numpy"] is True and report["blas"] == "1"
    assert report["threads"] in (None, 1)
    bad = _console("serve", "simulate", str(tmp_path / "missing.yaml"))
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[0] == (
        f"napkin: error: scenario: no such file '{tmp_path / 'missing.yaml'}'")
    assert _console("--version").returncode == 0


def test_a_users_blas_thread_setting_wins(tmp_path):
    path = tmp_path / "startup.yaml"
    path.write_text(SCENARIO)
    done = _console("serve", "simulate", str(path), "--format", "json",
                    env={**os.environ, "OPENBLAS_NUM_THREADS": "2"})
    assert done.returncode == 0
    assert json.loads(done.stderr.strip().splitlines()[-1])["blas"] == "2"


def test_leave_exits_as_system_exit_would():
    probe = ("import sys\nfrom napkin.cli.main import leave\nprint('buffered', end='')\n"
             "leave(None if sys.argv[1] == 'none' else int(sys.argv[1]) if sys.argv[1].isdigit()"
             " else sys.argv[1])")
    for arg, status, err in (("none", 0, ""), ("3", 3, ""), ("why", 1, "why\n")):
        done = subprocess.run([sys.executable, "-c", probe, arg], capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr) == (status, "buffered", err)


def _plugins_probe(code: str, setting: str) -> str:
    """``code`` in a fresh interpreter under ``PYDANTIC_DISABLE_PLUGINS=setting``; its
    output."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYDANTIC_DISABLE_PLUGINS": setting}
                          ).stdout


STAND_IN = "import sys\nfrom napkin.cli.main import _no_plugin_loader\n_no_plugin_loader()\n"


def test_the_stand_in_plugin_loader_returns_what_pydantics_own_does():
    """Under PYDANTIC_DISABLE_PLUGINS=__all__ pydantic's own loader returns no plugin; the
    stand-in returns the same, and a user's other setting gets pydantic's own loader."""
    own = _plugins_probe("from pydantic.plugin._loader import get_plugins\n"
                         "print(tuple(get_plugins()))", "__all__")
    stand_in = _plugins_probe(STAND_IN + "from pydantic.plugin._loader import get_plugins\n"
                              "print(tuple(get_plugins()), 'importlib.metadata' in sys.modules)",
                              "__all__")
    theirs = _plugins_probe(STAND_IN + "import pydantic.plugin._loader as loader\n"
                            "print(hasattr(loader, 'PYDANTIC_ENTRY_POINT_GROUP'))", "logfire")
    assert (own, stand_in) == ("()\n", "() False\n")
    assert theirs == "True\n"  # pydantic's own module, which honours their setting


def test_a_group_builds_only_the_command_it_runs(cli):
    """``napkin serve simulate`` builds ``serve`` with its ``simulate`` command alone; the
    group's help, a mistyped command and an option before the command get every command."""
    from napkin.cli import serve_cmds
    from napkin.cli.main import command

    names = set(command("serve").commands["serve"].commands)
    assert names >= {"demand", "simulate", "sweep"}
    assert len(names) == len(serve_cmds.app.registered_commands) > 3
    assert set(command("serve", "simulate").commands["serve"].commands) == {"simulate"}
    for other in ("--help", "simulat", None):
        assert set(command("serve", other).commands["serve"].commands) == names
    assert len(serve_cmds.app.registered_commands) == len(names)  # the group left whole
    code, out, _ = cli("serve", "--help")
    assert code == 0 and all(name in out for name in names)
    code, _, err = cli("serve", "simulat")
    assert code == 2 and "No such command 'simulat'" in err
