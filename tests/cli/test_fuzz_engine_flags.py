"""Fuzz of the engine's launch flags in scenarios: SGLang's ``scheduler_recv_interval`` and
TensorRT-LLM's ``batch_wait_timeout_iters`` / ``batch_wait_max_tokens_ratio`` and attention-DP
balancing (``attention_dp_timeout_iters`` / ``attention_dp_batching_wait_iters``). Any value is a
clean run with finite numbers or one error line naming the key; on the wrong backend, one line
naming the key and the backend it applies to."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite
from test_fuzz_planning import SCENARIO, _file, _refused

VALUES = st.one_of(st.integers(-5, 2000), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(["", "ten", "1e400", None, [1], {"a": 1}]))
KEYS = {"scheduler_recv_interval": "sglang", "batch_wait_timeout_iters": "trtllm",
        "batch_wait_max_tokens_ratio": "trtllm", "attention_dp_timeout_iters": "trtllm",
        "attention_dp_batching_wait_iters": "trtllm"}


def _valid(key: str, value: object) -> bool:
    """What the scenario's lax number fields take: finite numbers in range (a whole number for
    the step counts)."""
    if not isinstance(value, int | float):
        return False
    if key == "batch_wait_max_tokens_ratio":
        return value == value and 0 <= value <= 1
    if value != int(value) if value == value and abs(value) != float("inf") else True:
        return False
    low = 1 if key == "scheduler_recv_interval" else 0
    return low <= value <= (1000 if key == "scheduler_recv_interval" else 10000)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(sorted(KEYS)), value=VALUES)
def test_engine_flag_is_a_run_or_one_error_line(cli, tmp_path, key, value):
    engine = {**SCENARIO["engine"], "backend": KEYS[key], key: value}
    result = cli("serve", "simulate", _file(tmp_path, {**SCENARIO, "engine": engine}),
                 "--format", "json")
    if _valid(key, value):
        code, out, err = result
        assert code == 0, err
        assert_finite(json.loads(out))
    else:
        _refused(result, key)


def test_engine_flag_on_another_backend_names_it(cli, tmp_path):
    for key, backend in KEYS.items():
        value = 10 if key != "batch_wait_max_tokens_ratio" else 0.5
        engine = {**SCENARIO["engine"], "backend": "vllm", key: value}
        _refused(cli("serve", "simulate", _file(tmp_path, {**SCENARIO, "engine": engine})),
                 f"applies to backend {backend}")
