"""Fuzz of ``napkin web`` and of the web page's JSON endpoints: odd option values and odd form
fields give one line naming the field (exit 2 / HTTP 4xx with ``{"error": line}``) or a finite
answer; never a traceback, an HTTP 500 or a server that starts on a bad port."""

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from fastapi.testclient import TestClient
from jsonchecks import assert_finite
from test_fuzz_profile import ODD

from napkin.web.app import create_app

QUICK, LONG = 12, 300
HOSTS = ["", " ", "x", "256.1.1.1", "::1", "0.0.0.0", "127.0.0.1", "localhost", "-1", "nan",
         "127.0.0.1:80", "[::1]", "a" * 300, "10.255.255.1"]
ENDPOINTS = {
    "/api/decode": ["batch", "context", "reserve_gb", "mfu", "mbu", "overhead_ms", "gpu_mem_gb",
                    "gpu_bw_gbs", "gpu_tflops", "weights", "kv_dtype", "gpu", "model",
                    "unquantized"],
    "/api/capacity": ["count", "context", "avg_context", "reserve_gb", "gpu_mem_gb", "weights",
                      "kv_dtype", "gpu", "model", "unquantized"],
    "/api/model": ["model", "weights", "kv_dtype", "read_embedding", "unquantized"],
    "/api/train": ["seq", "micro_batch", "accumulation", "devices", "gpu", "zero", "tp",
                   "pipeline", "cp", "ep", "precision", "recompute", "mfu", "tokens",
                   "usd_per_gpu_hour", "model"],
}
SCENARIO = {"name": "toy", "model": "qwen3-0.6b", "gpu": "h100-sxm", "calibration": "roofline",
            "engine": {"max_num_seqs": 2, "kv_pool_gib": 1},
            "workload": {"classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
                         "arrivals": {"kind": "windows",
                                      "windows": [{"duration_s": 20, "rate_per_s": 0.5}]}}}
OVERRIDES = ["engine.max_num_seqs", "engine.kv_pool_gib", "mfu", "step_overhead_ms",
             "engine.block_size", "slo.ttft_s", "workload.arrivals.windows", "seed"]


def _profile(n: int) -> Any:
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def _values() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(ODD), st.floats().map(str),
                     st.integers(-2**70, 2**70).map(str))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(upload_dir=tmp_path_factory.mktemp("uploads")),
                      raise_server_exceptions=False)


def _answered(r: Any, names: list[str]) -> None:
    assert r.status_code != 500, r.text
    body = r.json()
    if r.status_code == 200:
        assert_finite(body["data"])
        return
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    line = body["error"]
    assert "\n" not in line and "Traceback" not in line, line
    assert any(n in line for n in names), (names, line)


def _endpoint_case(client: Any, data: Any) -> None:
    path = data.draw(st.sampled_from(sorted(ENDPOINTS)))
    key = data.draw(st.sampled_from(ENDPOINTS[path]))
    params = {"model": "qwen3-0.6b", "gpu": "h100-sxm", key: data.draw(_values())}
    flag = key.replace("_", "-")
    _answered(client.get(path, params=params), [key, flag, "MODEL", "count", "gpu"])


def _simulate_case(client: Any, data: Any) -> None:
    key = data.draw(st.sampled_from(OVERRIDES))
    value = data.draw(st.sampled_from(ODD))
    r = client.post("/api/simulate", json={"scenario": json.dumps(SCENARIO), "wait": True,
                                           "overrides": f"{key}={value}"})
    _answered(r, [key.split(".")[-1], "set", "scenario"])


def _sweep_case(client: Any, data: Any) -> None:
    key = data.draw(st.sampled_from(["rates", "seeds"]))
    value = data.draw(st.one_of(st.sampled_from(ODD), st.sampled_from(["0.1,0.2", "auto"])))
    r = client.post("/api/sweep", json={"scenario": json.dumps(SCENARIO), "wait": True,
                                        key: value})
    _answered(r, [key, "--" + key, "load factor"])


def _plan_case(client: Any, data: Any) -> None:
    key = data.draw(st.sampled_from(["jobs", "top"]))
    value = data.draw(st.sampled_from(ODD))
    plan = {"name": "toy", "model": "qwen3-0.6b", "calibration": "roofline",
            "workload": SCENARIO["workload"], "search": {"gpus": ["h100-sxm"],
                                                          "tensor_parallel": [1],
                                                          "replicas": [1], "max_num_seqs": [2]},
            "seeds": 1}
    r = client.post("/api/plan", json={"plan": json.dumps(plan), "wait": True, key: value,
                                       **({"jobs": "1"} if key != "jobs" else {})})
    _answered(r, [key, "--" + key])


def _command_case(cli: Any, monkeypatch: Any, data: Any) -> None:
    """``napkin web --port P --host H`` with the server stubbed: a bad value is one line naming
    port or host (exit 2) and the server is not started; a good one starts it on that port."""
    import uvicorn

    started: list[tuple[str, int]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: started.append((host,
                                                                                      port)))
    port = data.draw(st.one_of(st.sampled_from(ODD), st.integers(-2**40, 2**40).map(str)))
    host = data.draw(st.sampled_from(HOSTS))
    code, out, err = cli("web", "--port", port, "--host", host)
    assert "Traceback" not in err, err
    if code == 0:
        assert len(started) == 1 and 1 <= started[0][1] <= 65535, started
        assert out.startswith("napkin web: http://")
    else:
        assert code == 2 and not started, (code, started)
        assert err.startswith("napkin: error:") and err.count("\n") == 1, err
        assert "port" in err or "host" in err, err


@_profile(QUICK)
@given(data=st.data())
def test_quick_endpoints(client, data):
    _endpoint_case(client, data)


@_profile(4)
@given(data=st.data())
def test_quick_simulate(client, data):
    _simulate_case(client, data)


@_profile(4)
@given(data=st.data())
def test_quick_sweep(client, data):
    _sweep_case(client, data)


@_profile(4)
@given(data=st.data())
def test_quick_plan(client, data):
    _plan_case(client, data)


@pytest.mark.slow
@_profile(LONG // 5)
@given(data=st.data())
def test_long_sweep_and_plan(client, data):
    (_sweep_case if data.draw(st.booleans()) else _plan_case)(client, data)


@_profile(QUICK)
@given(data=st.data())
def test_quick_command(cli, monkeypatch, data):
    _command_case(cli, monkeypatch, data)


@pytest.mark.slow
@_profile(LONG)
@given(data=st.data())
def test_long_endpoints(client, data):
    _endpoint_case(client, data)


@pytest.mark.slow
@_profile(LONG // 5)
@given(data=st.data())
def test_long_simulate(client, data):
    _simulate_case(client, data)


@pytest.mark.slow
@_profile(LONG)
@given(data=st.data())
def test_long_command(cli, monkeypatch, data):
    _command_case(cli, monkeypatch, data)
