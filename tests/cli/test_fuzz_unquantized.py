"""Fuzz of ``--unquantized`` (and the scenario key): any mix of part names, separators and junk
is either a clean result with finite numbers or one error line naming the field."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite
from test_fuzz_planning import PLAN, SCENARIO, _file, _refused

from napkin.specs.dtypes import UNQUANTIZED_ROLES

parts = st.lists(st.one_of(st.sampled_from(UNQUANTIZED_ROLES),
                           st.sampled_from(["", " ", "ATTENTION", "attn", "experts", "lm_head",
                                            "\u00e9", "1e400", "nan", "checkpoint",
                                            " Checkpoint "])),
                 min_size=1, max_size=5).map(",".join)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=parts, command=st.sampled_from(["model", "decode", "capacity", "call"]))
def test_unquantized_is_a_result_or_one_error_line(cli, value, command):
    extra = {"model": [], "decode": ["--gpu", "b200"], "capacity": ["--gpu", "b200"],
             "call": ["--gpu", "b200", "--new", "64"]}[command]
    code, out, err = cli(command, "gpt-oss-20b", "--weights", "nvfp4", "--unquantized", value,
                         *extra, "--format", "json")
    names = {v.strip().lower() for v in value.split(",")} - {""}
    if names <= set(UNQUANTIZED_ROLES) or value.strip().lower() == "checkpoint":
        assert code == 0, err
        assert_finite(json.loads(out))
    else:
        _refused((code, out, err), "unquantized")


BAD_KEYS = [5, 1.5, float("nan"), ["attention"], {"a": 1}, "attn", "checkpoint,attention",
            "attention;router"]


@pytest.mark.parametrize("value", BAD_KEYS)
@pytest.mark.parametrize("kind", ["scenario", "plan"])
def test_unquantized_key_of_scenarios_and_plans(cli, tmp_path, kind, value):
    """A bad ``unquantized`` in a scenario or a plan file: one error line naming the key,
    nothing written; ``checkpoint`` and real parts run."""
    base, command = (SCENARIO, ("serve", "simulate")) if kind == "scenario" else \
        (PLAN, ("plan", "--jobs", "1"))
    _refused(cli(*command, _file(tmp_path, {**base, "unquantized": value})), "unquantized")
    code, out, err = cli(*command, _file(tmp_path, {**base, "unquantized": "checkpoint"},
                                         "ok.yaml"), "--format", "json")
    assert code == 0, err
    assert_finite(json.loads(out))


@pytest.mark.parametrize(("change", "field"), [
    ({"use_qk_norm": 3}, "use_qk_norm"), ({"use_qk_norm": "maybe"}, "use_qk_norm"),
    ({"use_qk_norm": True, "qk_norm_type": ["per_layer"]}, "qk_norm_type"),
    ({"use_qk_norm": True, "qk_norm_type": "PER_LAYER"}, "qk_norm_type"),
    ({"use_routing_bias": {"on": 1}}, "use_routing_bias"),
])
def test_minimax_config_keys_are_checked(cli, tmp_path, change, field):
    config = {"model_type": "minimax_m2", "hidden_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
              "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 1000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, **change}))
    _refused(cli("model", str(path)), field)
    path.write_text(json.dumps({**config, "use_qk_norm": True, "qk_norm_type": "per_layer",
                                "use_routing_bias": True}))
    assert cli("model", str(path))[0] == 0
