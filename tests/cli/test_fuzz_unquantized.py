"""Fuzz of ``--unquantized`` (and the scenario key): any mix of part names, separators and junk
is either a clean result with finite numbers or one error line naming the field."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite
from test_fuzz_planning import _refused

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
