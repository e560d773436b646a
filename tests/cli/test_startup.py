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
sys.argv = ["napkin", "serve", "simulate", sys.argv[1], "--format", "json"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules),
                  "plugins": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}))
"""

NOT_NEEDED = ("napkin.inference", "napkin.planning", "napkin.training", "napkin.reinforcement",
              "napkin.scaling", "napkin.agents", "napkin.web", "napkin.serving.sweep",
              "napkin.serving.fluid", "napkin.serving.demand", "napkin.calibration.profile",
              "napkin.calibration.protocol", "napkin.calibration.measurements", "rich",
              "matplotlib", "pandas", "pyarrow", "scipy", "html")


def test_serve_simulate_imports_only_what_it_uses(tmp_path):
    path = tmp_path / "startup.yaml"
    path.write_text(SCENARIO)
    probe = subprocess.run([sys.executable, "-c", PROBE, str(path)], check=True,
                           capture_output=True, text=True)
    result = json.loads(probe.stdout)
    assert result["code"] == 0
    summary = json.loads(result["out"])["scenarios"][0]["summary"]
    assert summary["requests"] == 3  # it did simulate
    loaded = [m for m in result["modules"] if m.startswith(NOT_NEEDED)]
    assert loaded == []
    assert result["plugins"] == "__all__"  # no scan of every package's entry points


def test_a_users_pydantic_plugin_setting_wins(tmp_path):
    path = tmp_path / "startup.yaml"
    path.write_text(SCENARIO)
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "logfire"}
    probe = subprocess.run([sys.executable, "-c", PROBE, str(path)], check=True,
                           capture_output=True, text=True, env=env)
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
    assert [m for m in ast.literal_eval(modules) if m.startswith(heavy)] == []
