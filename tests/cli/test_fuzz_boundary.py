"""Fuzz of the input boundary patterns of issue 11: every float option is finite (one parser),
every file-format float is finite (one pydantic base), union and tag errors name the user's
field, ``--plot``/``--export`` are checked before any work, and exports are written whole
or not at all."""

import inspect
import json
import os
from pathlib import Path
from typing import get_args

import pytest
import typer
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite
from test_fuzz_planning import SCENARIO, WORKLOAD, _file, _refused

from napkin.cli import common
from napkin.cli.main import app
from napkin.report import export
from napkin.specs.files import atomic_write

NON_FINITE = ["inf", "-inf", "nan", "1e400", "-1e999"]

FLOAT_OPTIONS = [
    (["capacity", "qwen3-8b", "--gpu", "h100-sxm"], "--reserve-gb"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm"], "--mfu"),
    (["media", "interrupt"], "--command-ms"),
    (["media", "jitter"], "--block-ms"),
    (["scaling", "optimum"], "--flops"),
    (["rl", "qwen3-0.6b"], "--keep-rate"),
    (["cost", "price", "--tokens-ratio", "1", "--success-old", "0.5", "--success-new", "0.6"],
     "--price-ratio"),
    (["pretrain"], "--days"),
    (["train", "qwen3-0.6b", "--seq", "512"], "--inter-node-gbs"),
]


def _commands(group: typer.Typer) -> list:
    found = [c.callback for c in group.registered_commands]
    for sub in group.registered_groups:
        found += _commands(sub.typer_instance)
    return found


def test_every_float_option_is_parsed_finite():
    """The pattern, enforced: no command takes a float without :func:`common.finite`."""
    plain, checked = [], 0
    for fn in _commands(app):
        for name, param in inspect.signature(fn, eval_str=True).parameters.items():
            if param.annotation is typer.Context:  # the run-record commands read their source
                continue
            base, *meta = get_args(param.annotation)
            if base in (float, float | None):
                info = next(m for m in meta if isinstance(m, typer.models.ParameterInfo))
                checked += 1
                if info.parser is not common.finite:
                    plain.append(f"{fn.__name__}.{name}")
    assert checked > 50
    assert plain == []


@pytest.mark.parametrize(("base", "option"), FLOAT_OPTIONS)
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.sampled_from(NON_FINITE))
def test_non_finite_float_options_are_refused(cli, base, option, value):
    code, out, err = cli(*base, option, value, "--format", "json")
    _refused((code, out, err), option)
    assert "finite" in err


@pytest.mark.parametrize(("setting", "field"), [
    ("engine.kv_pool_gib=.inf", "engine.kv_pool_gib"),
    ("engine.kv_pool_gib=.nan", "engine.kv_pool_gib"),
    ("slo.ttft_s=.inf", "slo.ttft_s"),
    ("step_overhead_ms=.inf", "step_overhead_ms"),
    ("workload.classes.a.input_tokens=-5", "workload.classes.a.input_tokens:"),
    ("workload.classes.a.input_tokens={dist: uniform, low: 1, high: x}",
     "workload.classes.a.input_tokens.high"),
    ("workload.classes.a.input_tokens={dist: zipf}", "dist must be one of"),
    ("workload.arrivals.kind=bogus", "'windows', 'poisson'"),
    ("mfu=[1", "set"),
])
def test_file_fields_name_the_users_field(cli, tmp_path, setting, field):
    _refused(cli("serve", "simulate", _file(tmp_path, SCENARIO), "--set", setting), field)
    assert ".str" not in cli("serve", "simulate", _file(tmp_path, SCENARIO), "--set",
                             setting)[2]


def test_a_mix_weight_is_finite(cli, tmp_path):
    arrivals = {**WORKLOAD["arrivals"], "windows": [
        {"duration_s": 20, "rate_per_s": 0.5, "mix": {"a": float("inf")}}]}
    _refused(cli("serve", "demand", _file(tmp_path, {**WORKLOAD, "arrivals": arrivals})),
             "arrivals.windows.0.mix.a")


def test_a_missing_kind_lists_the_kinds(cli, tmp_path):
    wl = {**WORKLOAD, "arrivals": {"rate_per_s": 1, "duration_s": 1}}
    _refused(cli("serve", "demand", _file(tmp_path, wl)), "kind must be one of 'windows'")


@pytest.mark.parametrize("plot", ["out", "x.bogus", "nodir/x.png", "{tmp}"])
def test_plot_paths_are_checked_when_parsed(cli, tmp_path, plot):
    for args in (["serve", "simulate", _file(tmp_path, SCENARIO)],
                 ["serve", "sweep", _file(tmp_path, SCENARIO)],
                 ["media", "jitter"]):
        _refused(cli(*args, "--plot", plot.format(tmp=tmp_path)), "--plot")
    assert not (tmp_path / "out.png").exists()


def test_export_onto_a_file_is_refused(cli, tmp_path):
    (tmp_path / "afile").write_text("")
    _refused(cli("serve", "simulate", _file(tmp_path, SCENARIO), "--export",
                 str(tmp_path / "afile")), "export")
    _refused(cli("serve", "simulate", _file(tmp_path, SCENARIO), "--export",
                 str(tmp_path / "no" / "such")), "export")


def test_nothing_is_exported_until_every_scenario_is_valid(cli, tmp_path):
    good = _file(tmp_path, SCENARIO, "a.yaml")
    bad = _file(tmp_path, {**SCENARIO, "name": "b", "engine": {"max_num_seqs": 0}}, "b.yaml")
    out = tmp_path / "out"
    _refused(cli("serve", "simulate", good, bad, "--export", str(out)), "max_num_seqs")
    _refused(cli("serve", "simulate", good, "--export", str(out), "--plot",
                 str(tmp_path / "nope" / "x.png")), "--plot")
    _refused(cli("serve", "simulate", good, _file(tmp_path, SCENARIO, "a2.yaml"), "--export",
                 str(out)), "same files")
    assert not out.exists()


def test_simulate_json_diffs_equal_across_runs(cli, tmp_path):
    path = _file(tmp_path, SCENARIO)
    first, second = (cli("serve", "simulate", path, "--format", "json") for _ in range(2))
    assert first[0] == 0 and first[1] == second[1]
    assert "wall_s" not in first[1]
    assert_finite(json.loads(first[1]))


def test_an_export_interrupted_by_a_failure_leaves_no_partial_file(tmp_path, monkeypatch):
    """A failure (here: the row writer raising half-way, as Ctrl-C would) leaves neither the
    target nor a temporary file; an earlier complete file is kept as it was."""
    target = tmp_path / "toy.requests.csv"
    target.write_text("old\n")

    class Boom(KeyboardInterrupt):
        pass

    def rows() -> object:
        yield from ([i] for i in range(100))
        raise Boom

    cols = {"rid": [0, 1]}
    monkeypatch.setattr(export, "zip", lambda *a, **k: rows(), raising=False)
    with pytest.raises(Boom):
        export.write_table(cols, target)
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.requests.csv"]


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "f.txt"
    with atomic_write(target) as tmp:
        Path(tmp).write_text("whole")
    assert target.read_text() == "whole"
    with pytest.raises(RuntimeError), atomic_write(target) as tmp:
        Path(tmp).write_text("half")
        raise RuntimeError
    assert target.read_text() == "whole" and len(list(tmp_path.iterdir())) == 1


def test_atomic_write_gives_the_mode_a_new_file_gets(tmp_path):
    """Not the temporary file's owner-only 0o600: 0o666 less the umask, as ``open`` gives."""
    old = os.umask(0o027)
    try:
        with atomic_write(tmp_path / "f.txt") as tmp:
            Path(tmp).write_text("x")
        with open(tmp_path / "g.txt", "w") as f:  # what open() gives under the same umask
            f.write("x")
    finally:
        os.umask(old)
    mode = (tmp_path / "f.txt").stat().st_mode & 0o777
    assert mode == 0o640 == (tmp_path / "g.txt").stat().st_mode & 0o777


@pytest.mark.parametrize("body", ["[" * 100_000, "{\"a\": " * 50_000])
def test_deeply_nested_config_json(cli, tmp_path, body):
    path = tmp_path / "c.json"
    path.write_text(body)
    _refused(cli("model", str(path)), "model")


def test_trajectory_floats_are_finite(cli, tmp_path):
    traj = yaml.safe_load(Path("examples/agent-dag.yaml").read_text())
    traj["arrival_s"] = float("inf")
    _refused(cli("agent", _file(tmp_path, traj)), "arrival_s")


# --- the remaining examples of issue 11: ranges, bounds, silent acceptance, field names ---

@pytest.mark.parametrize(("args", "field"), [
    (["scaling", "optimum", "--flops", "5e-324"], "flops:"),
    (["scaling", "optimum", "--flops", "1e41"], "flops:"),
    (["rl", "qwen3-0.6b", "--keep-rate", "1e-308"], "keep-rate:"),
    (["rl", "qwen3-0.6b", "--keep-rate", "1e-5"], "keep-rate:"),
    (["media", "diffusion", "--vae-factor", "0"], "vae-factor:"),
    (["media", "jitter", "--blocks", "2147483648"], "blocks:"),
    (["media", "audio", "--codebooks", "2147483648"], "codebooks:"),
    (["context", "growth", "--system", "1", "--step", "1", "--steps", "2147483648"], "steps:"),
    (["capacity", "deepseek-v3", "--gpu", "h100-sxm"], "--count >= 17"),
    (["capacity", "qwen3-8b", "--gpu", "h100-sxm", "--reserve-gb", "80"], "reserve-gb:"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--reserve-gb", "1000"], "reserve-gb:"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--context", "-1"], "context:"),
    (["agent", "examples/agent-dag.yaml", "--mfu", "-1"], "mfu: only used with --gpu"),
    (["agent", "examples/agent-dag.yaml", "--weights", "fp8"], "weights: only used with --gpu"),
    (["cost", "price", "--price-ratio", "-1", "--tokens-ratio", "1", "--success-old", "0.5",
      "--success-new", "0.6"], "price-ratio:"),
    (["pretrain", "--mfu", "1.0000001"], "mfu:"),
    (["pretrain", "--count", "-1"], "count:"),
    (["pretrain", "--days", "1e300"], "days:"),
    (["pretrain", "--alt", "5e-324"], "alt:"),
    (["decode", "qwen3-8b", "--gpu-mem-gb", "5e-324", "--gpu-bw-gbs", "1", "--gpu-tflops", "1"],
     "gpu-mem-gb:"),
])
def test_remaining_examples_are_refused_naming_the_flag(cli, args, field):
    _refused(cli(*args, "--format", "json"), field)


def _workload(tmp_path, arrivals: dict, name: str = "w.yaml") -> str:
    return _file(tmp_path, {"classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
                            "arrivals": arrivals}, name)


@pytest.mark.parametrize(("arrivals", "field"), [
    ({"kind": "gamma", "rate_per_s": 1, "cv": 1e-300, "num_requests": 10}, "arrivals.cv"),
    ({"kind": "poisson", "rate_per_s": 5e-324, "num_requests": 10}, "arrivals.rate_per_s"),
    ({"kind": "windows", "windows": [{"duration_s": 1e308, "requests": 1}]},
     "arrivals.windows.0.duration_s"),
    ({"kind": "windows", "windows": [{"duration_s": 10, "requests": 0}]}, "arrivals:"),
    ({"kind": "closed_loop", "clients": 10**12, "num_requests": 5}, "arrivals.clients"),
])
def test_workload_ranges(cli, tmp_path, arrivals, field):
    _refused(cli("serve", "demand", _workload(tmp_path, arrivals)), field)


def test_a_workload_of_no_requests_is_refused_by_the_simulator(cli, tmp_path):
    scenario = {**SCENARIO, "workload": {**WORKLOAD, "arrivals": {
        "kind": "windows", "windows": [{"duration_s": 20, "requests": 0}]}}}
    _refused(cli("serve", "simulate", _file(tmp_path, scenario)), "arrivals:")


def test_window_s_is_positive_and_bounded(cli, tmp_path):
    wl = _workload(tmp_path, WORKLOAD["arrivals"])
    _refused(cli("serve", "demand", wl, "--window-s", "0"), "window-s: must be > 0")
    (tmp_path / "t.csv").write_text("t,i,o\n0,10,20\n1e308,10,20\n")
    trace = _file(tmp_path, {"arrivals": {"kind": "trace", "format": "csv", "path": "t.csv",
                                          "arrival_column": "t", "input_column": "i",
                                          "output_column": "o"}}, "trace.yaml")
    _refused(cli("serve", "demand", trace), "window-s: the workload's arrivals: span 1e+308 s")
    code, out, _ = cli("serve", "demand", trace, "--window-s", "1e308", "--format", "json")
    assert code == 0 and len(json.loads(out)["windows"]) == 2


@pytest.mark.parametrize(("fmt", "name", "text", "field"), [
    ("azure", "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
     "2023-11-16 18:15:46.68,99999999999999999999,20\n", "'ContextTokens'"),
    ("azure", "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
     "2023-11-16 18:15:46.68-99:99,10,20\n", "'TIMESTAMP'"),
    ("mooncake", "t.jsonl", '{"timestamp": 0, "input_length": 99999999999999999999, '
     '"output_length": 5}\n', "'input_length'"),
    ("csv", "t.csv", "t,i,o\n-1e308,1,1\n1e308,1,1\n", "arrival times span"),
])
def test_trace_values_out_of_range(cli, tmp_path, fmt, name, text, field):
    (tmp_path / name).write_text(text)
    columns = ({"arrival_column": "t", "input_column": "i", "output_column": "o"}
               if fmt == "csv" else {})
    path = _file(tmp_path, {"arrivals": {"kind": "trace", "format": fmt, "path": name,
                                         **columns}})
    _refused(cli("serve", "demand", path), field)


@pytest.mark.parametrize(("change", "field"), [
    ({"num_hidden_layers": 2**63}, "num_hidden_layers"),
    ({"vocab_size": 10**30}, "vocab_size"),
    ({"num_attention_heads": 3000}, "hidden_size (256) must be a multiple of num_attention_heads"),
])
def test_config_sizes_are_bounded(cli, tmp_path, change, field):
    config = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 512, "vocab_size": 1000, **change}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    _refused(cli("model", str(path)), field)
    path.write_text(json.dumps({**config, "num_hidden_layers": 2, "vocab_size": 1000,
                                "head_dim": 64}))
    assert cli("model", str(path))[0] == 0  # head_dim given: heads need not divide hidden


@pytest.mark.parametrize(("option", "value", "field"), [
    ("--replay", "-1", "replay"), ("--encoder-layers", "-2", "encoder-layers"),
    ("--decoder-layers", "10001", "decoder-layers"), ("--prompt", "0", "prompt"),
    ("--prompt", "100000001", "prompt")])
def test_ced_names_each_field(cli, option, value, field):
    """Each of ``napkin ced``'s counts is checked on its own and named (not lumped)."""
    _refused(cli("ced", option, value), field)
