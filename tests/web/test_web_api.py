"""``napkin web``'s JSON endpoints (FastAPI's TestClient): every number is the public API's
``.data``, every bad input the CLI's one-line error, long runs are jobs with progress."""

import copy
import json
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("fastapi", reason="the web extra is not installed (pip install 'napkin[web]')")
pytest.importorskip("plotly", reason="the web extra is not installed (pip install 'napkin[web]')")
with warnings.catch_warnings():  # starlette's TestClient on httpx: a deprecation notice only
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from web_inputs import SMALL_PLAN, SMALL_WINDOWS

import napkin.api.agents as agents_api
import napkin.api.catalog as catalog_api
import napkin.api.inference as inference_api
import napkin.api.planning as planning_api
import napkin.api.serving as serving_api
from napkin.errors import NapkinError
from napkin.web.app import create_app
from napkin.web.presets import presets_dir
from napkin.web.results import MAX_POINTS

EXAMPLES = presets_dir()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(upload_dir=tmp_path_factory.mktemp("uploads")))


def api_error(fn, *args, **kwargs) -> str:
    with pytest.raises(NapkinError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def cli_error(cli, *args: str) -> str:
    code, _, err = cli(*args)
    assert code == 2
    line = err.strip()
    assert line.startswith("napkin: error: ") and "\n" not in line
    return line.removeprefix("napkin: error: ")


def tables(result) -> list[dict]:
    return [{"title": s.title, "columns": s.columns, "rows": s.rows, "notes": s.notes}
            for s in result.document.sections]


def scenario_text() -> tuple[dict, str]:
    """The shipped chapter 3-1 scenario and its workload file's text."""
    scenario = yaml.safe_load((EXAMPLES / "chapter-3-1-uniform.yaml").read_text())
    return scenario, (EXAMPLES / scenario["workload"]).read_text()


def inline(scenario: dict, workload_text: str) -> dict:
    out = copy.deepcopy(scenario)
    out["workload"] = yaml.safe_load(workload_text)
    return out


def wait_job(client, job_id: str, timeout_s: float = 120) -> dict:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] != "running":
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still running after {timeout_s} s")


# --- pages and assets


@pytest.mark.parametrize("path", ["/", "/model", "/scenario", "/plan", "/trajectory"])
def test_pages_are_served(client, path):
    r = client.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    if path != "/":
        assert '<script src="/vendor/plotly.min.js"></script>' in r.text
        assert "cdn" not in r.text.lower()
    assert 'src="http' not in r.text and 'href="http' not in r.text


def test_no_page_loads_from_a_cdn(client):
    assert client.get("/api/docs").status_code == 404  # FastAPI's docs page would
    assert client.get("/api/openapi.json").json()["paths"]["/api/decode"]


def test_assets_ship_in_the_package_no_cdn(client):
    r = client.get("/vendor/plotly.min.js")
    assert r.status_code == 200 and "javascript" in r.headers["content-type"]
    assert len(r.content) > 1_000_000 and b"plotly.js" in r.content[:200]
    for name in ("common.js", "model.js", "scenario.js", "plan.js", "trajectory.js",
                 "style.css"):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200, name
        assert "http://" not in r.text and "https://" not in r.text, name


def test_assets_are_sent_compressed(client):
    """Plotly's bundle goes out gzipped (compressed once) to a client that accepts it, whole
    to one that does not; pages, scripts and JSON answers over 1 kB are gzipped too."""
    import gzip

    from napkin.web.pages import plotly_bundle

    plain = plotly_bundle().read_bytes()
    r = client.get("/vendor/plotly.min.js", headers={"Accept-Encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip" and r.headers["vary"] == "Accept-Encoding"
    sent = int(r.headers["content-length"])
    assert r.content == plain  # the client decodes it
    assert sent == len(gzip.compress(plain, compresslevel=9, mtime=0)) < len(plain) / 2.5
    r = client.get("/vendor/plotly.min.js", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in r.headers and len(r.content) == len(plain)
    for url in ("/static/common.js", "/plan", "/api/models"):
        r = client.get(url, headers={"Accept-Encoding": "gzip"})
        assert r.headers.get("content-encoding") == "gzip", url


# --- catalog and model × GPU


def test_catalog_endpoints_equal_the_api(client):
    assert client.get("/api/models").json()["data"] == catalog_api.list_models().data
    r = client.get("/api/gpus").json()
    assert r["data"] == catalog_api.list_gpus().data
    assert r["title"] == catalog_api.list_gpus().title


def test_model_endpoint_equals_describe_model(client):
    r = client.get("/api/model", params={"model": "qwen3-8b", "weights": "fp8",
                                         "kv_dtype": "fp8"})
    assert r.status_code == 200
    result = catalog_api.describe_model("qwen3-8b", weights="fp8", kv_dtype="fp8")
    assert r.json()["data"] == result.data
    assert r.json()["tables"] == tables(result)


def test_unquantized_reaches_the_model_decode_and_capacity_endpoints(client):
    """gpt-oss-120b at MXFP4 keeping its checkpoint's BF16 parts: 65.19 GB of weights (the
    model card's 60.8 GiB) where all-MXFP4 is 62.06 GB, on each endpoint as in the API."""
    params = {"model": "gpt-oss-120b", "weights": "mxfp4", "unquantized": "checkpoint",
              "gpu": "h200"}
    kept = catalog_api.describe_model("gpt-oss-120b", weights="mxfp4", unquantized="checkpoint")
    r = client.get("/api/model", params=params)
    assert r.status_code == 200 and r.json()["data"] == kept.data
    assert r.json()["data"]["weights_bytes"] == pytest.approx(65.19e9, rel=1e-3)
    plain = client.get("/api/model", params={**params, "unquantized": ""}).json()["data"]
    assert plain["weights_bytes"] < r.json()["data"]["weights_bytes"]
    for endpoint, api in (("decode", inference_api.decode_table),
                          ("capacity", inference_api.capacity)):
        got = client.get(f"/api/{endpoint}", params=params)
        assert got.status_code == 200, got.text
        assert got.json()["data"] == api("gpt-oss-120b", gpu="h200", weights="mxfp4",
                                         unquantized="checkpoint").data
    bad = client.get("/api/model", params={**params, "unquantized": "attn"})
    assert bad.status_code == 422 and "unquantized" in bad.json()["error"]


def test_decode_endpoint_equals_decode_table(client, cli):
    r = client.get("/api/decode", params={"model": "qwen3-8b", "gpu": "h200", "context": "256",
                                          "batch": "1,64,256,1024,2048", "mfu": "0.8",
                                          "mbu": "0.9", "reserve_gb": "2"})
    assert r.status_code == 200
    result = inference_api.decode_table("qwen3-8b", gpu="h200", context=256,
                                        batch=[1, 64, 256, 1024, 2048], mfu=0.8, mbu=0.9,
                                        reserve_gb=2)
    assert r.json()["data"] == result.data
    assert r.json()["tables"] == tables(result)
    _, out, _ = cli("decode", "qwen3-8b", "--gpu", "h200", "--context", "256", "--batch",
                    "1,64,256,1024,2048", "--mfu", "0.8", "--mbu", "0.9", "--reserve-gb", "2",
                    "--format", "json")
    assert r.json()["data"] == json.loads(out)


def test_capacity_endpoint_equals_capacity(client):
    r = client.get("/api/capacity", params={"model": "llama-3.1-70b", "gpu": "h100-sxm",
                                            "count": "4", "context": "8192",
                                            "avg_context": "2048", "weights": "fp8"})
    assert r.status_code == 200
    result = inference_api.capacity("llama-3.1-70b", gpu="h100-sxm", count=4, context=8192,
                                    avg_context=2048, weights="fp8")
    assert r.json()["data"] == result.data
    assert r.json()["data"]["capacity"]["users"] == result.value.users


@pytest.mark.parametrize(("endpoint", "params", "cli_args"), [
    ("decode", {"model": "no-such-model", "gpu": "h100-sxm"},
     ["decode", "no-such-model", "--gpu", "h100-sxm"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h999"}, ["decode", "qwen3-8b", "--gpu", "h999"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h100-sxm", "batch": "1,x"},
     ["decode", "qwen3-8b", "--gpu", "h100-sxm", "--batch", "1,x"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h100-sxm", "batch": "0,4"},
     ["decode", "qwen3-8b", "--gpu", "h100-sxm", "--batch", "0,4"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h100-sxm", "mfu": "2"},
     ["decode", "qwen3-8b", "--gpu", "h100-sxm", "--mfu", "2"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h100-sxm", "mfu": "abc"},
     ["decode", "qwen3-8b", "--gpu", "h100-sxm", "--mfu", "abc"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h100-sxm", "mbu": "inf"},
     ["decode", "qwen3-8b", "--gpu", "h100-sxm", "--mbu", "inf"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h100-sxm", "context": "abc"},
     ["decode", "qwen3-8b", "--gpu", "h100-sxm", "--context", "abc"]),
    ("decode", {"model": "qwen3-8b", "gpu": "h100-sxm", "context": "-5"},
     ["decode", "qwen3-8b", "--gpu", "h100-sxm", "--context", "-5"]),
    ("capacity", {"model": "qwen3-8b", "gpu": "h100-sxm", "count": "0"},
     ["capacity", "qwen3-8b", "--gpu", "h100-sxm", "--count", "0"]),
    ("model", {"model": "qwen3-8b", "weights": "fp7"}, ["model", "qwen3-8b", "--weights", "fp7"]),
    ("model", {}, ["model"]),
])
def test_bad_input_is_the_clis_one_line(client, cli, endpoint, params, cli_args):
    r = client.get(f"/api/{endpoint}", params=params)
    assert r.status_code == 422
    assert r.json() == {"error": cli_error(cli, *cli_args)}


# --- presets and uploads


def test_presets_list_the_shipped_files_by_kind(client):
    p = client.get("/api/presets").json()
    assert "chapter-3-1-uniform.yaml" in p["scenario"]
    assert p["plan"] == ["plan-llama-70b-fp8.yaml", "plan-moe-deepseek-v3-dep.yaml"]
    assert "agent-dag.yaml" in p["trajectory"]
    assert "chapter-3-1-uniform.workload.yaml" in p["workload"]
    one = client.get("/api/presets/chapter-3-1-uniform.yaml").json()
    scenario, workload = scenario_text()
    assert one["kind"] == "scenario"
    assert yaml.safe_load(one["text"]) == scenario
    assert one["workload"] == {"name": scenario["workload"], "text": workload}
    r = client.get("/api/presets/nope.yaml")
    assert r.status_code == 422 and r.json()["error"].startswith("preset: no shipped file")


def test_upload_keeps_the_file(client):
    r = client.post("/api/upload", files={"file": ("my trace.csv", b"t,in,out\n0,10,5\n")})
    assert r.status_code == 200
    up = r.json()
    assert up["name"] == "my-trace.csv" and up["bytes"] == 16
    assert Path(up["path"]).read_bytes() == b"t,in,out\n0,10,5\n"


# --- serving simulator


def test_simulate_now_equals_the_api(client):
    scenario, workload = scenario_text()
    overrides = [SMALL_WINDOWS, "engine.max_num_seqs=32"]
    r = client.post("/api/simulate", json={
        "scenario": yaml.safe_dump(scenario), "workload": workload,
        "overrides": "\n".join(overrides), "seed": "3", "wait": True})
    assert r.status_code == 200, r.text
    body = r.json()
    result = serving_api.simulate(inline(scenario, workload), overrides=overrides, seed=3)
    assert body["data"] == result.data
    assert body["tables"][0] == tables(result)[0]
    (series,) = body["series"]
    summary = body["data"]["scenarios"][0]["summary"]
    assert summary["requests"] == 40
    assert len(series["cdf"]["ttft_s"]["x"]) == 40 and series["cdf"]["ttft_s"]["y"][-1] == 1
    assert max(series["cdf"]["e2e_s"]["x"]) == pytest.approx(summary["e2e"]["p99_s"], rel=0.05)
    (engine,) = series["engines"]
    assert engine["kv_blocks"] == body["data"]["scenarios"][0]["inputs"]["kv_blocks"]
    assert len(engine["t_s"]) == len(engine["waiting"]) == len(engine["kv_blocks_used"])
    assert 0 < len(engine["t_s"]) <= MAX_POINTS
    # sampled at the end of each simulated unit: at most the peak, which counts within units
    used = max(engine["kv_blocks_used"]) / engine["kv_blocks"]
    assert 0.9 * summary["peak_kv_frac"] <= used <= summary["peak_kv_frac"]


def test_simulate_job_reports_progress(client):
    scenario, workload = scenario_text()
    r = client.post("/api/simulate", json={"scenario": yaml.safe_dump(scenario),
                                           "workload": workload, "overrides": [SMALL_WINDOWS]})
    assert r.status_code == 202
    job = wait_job(client, r.json()["job"])
    assert job["status"] == "done", job["error"]
    assert job["progress"]["requests"] == 40 and job["progress"]["scenario"] == scenario["name"]
    assert job["progress"]["finished"] > 0 and job["progress"]["t_s"] > 0
    expected = serving_api.simulate(inline(scenario, workload), overrides=[SMALL_WINDOWS])
    assert job["result"]["data"] == expected.data


def test_simulate_errors_are_the_apis_line(client):
    scenario, workload = scenario_text()
    bad = ["engine.max_num_seqs=0"]
    r = client.post("/api/simulate", json={"scenario": yaml.safe_dump(scenario),
                                           "workload": workload, "overrides": bad})
    job = wait_job(client, r.json()["job"])
    assert job["status"] == "error"
    assert job["error"] == api_error(serving_api.simulate, inline(scenario, workload),
                                     overrides=bad)
    assert "engine.max_num_seqs" in job["error"]
    r = client.post("/api/simulate", json={"scenario": "model: [unclosed"})
    assert r.status_code == 422 and r.json()["error"].startswith("scenario: not valid YAML (")
    r = client.post("/api/simulate", json={"scenario": "- a list"})
    assert r.json() == {"error": "scenario: a scenario must be a YAML mapping"}
    r = client.post("/api/simulate", json={"scenario": ""})
    assert r.json() == {"error": "scenario: give the scenario (YAML)"}
    r = client.post("/api/simulate", json={"scenario": yaml.safe_dump(scenario),
                                           "seed": "x", "wait": True})
    assert r.json()["error"].startswith("Invalid value for '--seed'")


def test_bad_requests_are_400_with_one_line(client):
    r = client.post("/api/simulate", content=b"not json",
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"].startswith("request: ")
    r = client.post("/api/agent", json=[1, 2])
    assert r.status_code == 400 and "\n" not in r.json()["error"]
    r = client.get("/api/jobs/nope")
    assert r.status_code == 404 and r.json() == {"error": "job: no such job 'nope'"}


# --- planner


def test_plan_equals_the_api(client):
    r = client.post("/api/plan", json={"plan": SMALL_PLAN, "jobs": "1", "top": "5"})
    assert r.status_code == 202
    job = wait_job(client, r.json()["job"])
    assert job["status"] == "done", job["error"]
    assert job["progress"]["done"] == job["progress"]["total"] > 0
    expected = planning_api.plan(yaml.safe_load(SMALL_PLAN), jobs=1, top=5)
    got = job["result"]["data"]
    assert got == expected.data  # no wall-clock figure in the data: the same plan, the same data
    assert job["result"]["timing"]["wall_s"] > 0
    assert got["launch"] == expected.data["launch"]
    ranked = [t for t in job["result"]["tables"] if t["title"].startswith("feasible")]
    assert ranked and ranked[0]["rows"][0][1].startswith(f"{got['cheapest']['replicas']}×")


def test_plan_errors_are_the_apis_line(client):
    bad = SMALL_PLAN.replace("gpus: [h200, b200]", "gpus: [h999]")
    r = client.post("/api/plan", json={"plan": bad, "jobs": 1, "wait": True})
    assert r.status_code == 422
    assert r.json()["error"] == api_error(planning_api.plan, yaml.safe_load(bad), jobs=1)
    r = client.post("/api/plan", json={"plan": SMALL_PLAN, "top": "0", "wait": True})
    assert r.json()["error"] == api_error(planning_api.plan, yaml.safe_load(SMALL_PLAN), top=0)
    assert r.json()["error"] == "top: must be greater than or equal to 1, got 0 (int)"


# --- trajectories


def _trajectory(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text())


def test_agent_equals_the_api(client):
    text = (EXAMPLES / "agent-dag.yaml").read_text()
    r = client.post("/api/agent", json={"trajectory": text, "speedup": "kind:tool=2\n"})
    assert r.status_code == 200
    result = agents_api.analyze_trajectory(_trajectory("agent-dag.yaml"),
                                           speedup=["kind:tool=2"])
    assert r.json()["data"] == result.data
    assert r.json()["data"]["critical_path_s"] == 15
    assert r.json()["tables"] == tables(result)
    branches = (EXAMPLES / "agent-branches.yaml").read_text()
    r = client.post("/api/agent", json={"trajectory": branches, "gpu": "h100-sxm",
                                        "mfu": "0.5"})
    result = agents_api.analyze_trajectory(_trajectory("agent-branches.yaml"),
                                           gpu="h100-sxm", mfu=0.5)
    assert r.status_code == 200 and r.json()["data"] == result.data


def test_agent_logged_set(client):
    names = ["agent-code-fix-reasoning.yaml", "agent-code-fix-no-reasoning.yaml"]
    r = client.post("/api/agent", json={
        "trajectories": [(EXAMPLES / n).read_text() for n in names]})
    assert r.status_code == 200
    result = agents_api.analyze_trajectory([_trajectory(n) for n in names])
    assert r.json()["data"] == result.data
    assert r.json()["data"]["attempts"] == 2


def test_agent_errors_are_the_clis_line(client, cli):
    path = str(EXAMPLES / "agent-dag.yaml")
    text = Path(path).read_text()
    r = client.post("/api/agent", json={"trajectory": text, "speedup": "tool_a=0"})
    assert r.status_code == 422
    assert r.json()["error"] == cli_error(cli, "agent", path, "--speedup", "tool_a=0")
    r = client.post("/api/agent", json={"trajectory": text, "mfu": "0.5"})
    assert r.json()["error"] == cli_error(cli, "agent", path, "--mfu", "0.5")
    r = client.post("/api/agent", json={"trajectory": (EXAMPLES / "agent-branches.yaml")
                                        .read_text()})
    assert r.json()["error"] == cli_error(cli, "agent", str(EXAMPLES / "agent-branches.yaml"))


# --- the command


def test_web_command_imports_no_web_stack():
    code = ("import sys, napkin.cli.web_cmd; "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'plotly') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_web_command_without_the_extra_says_how_to_install(monkeypatch):
    from napkin.cli import web_cmd

    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(NapkinError) as info:
        web_cmd.web(port=8765, host="127.0.0.1")
    assert "pip install 'napkin[web]'" in str(info.value) and "\n" not in str(info.value)


def test_web_command_refuses_a_busy_port_and_a_bad_one():
    from napkin.cli import web_cmd

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(NapkinError, match=rf"^port: cannot listen on 127.0.0.1:{port}"):
            web_cmd.web(port=port, host="127.0.0.1")
    with pytest.raises(NapkinError, match=r"^port: must be in \[1, 65535\], got 70000"):
        web_cmd.web(port=70000, host="127.0.0.1")


def test_napkin_web_is_a_cli_command(cli):
    from napkin.cli.main import app

    if "web" not in {c.name for c in app.registered_commands}:
        pytest.skip("`napkin web` is not registered in napkin.cli.main yet")
    code, out, _ = cli("web", "--help")
    assert code == 0 and "--port" in out and "--host" in out
    code, _, err = cli("web", "--port", "70000")
    assert code == 2 and err.strip() == "napkin: error: port: must be in [1, 65535], got 70000"


# --- load sweep, training, docs


def test_sweep_now_equals_the_api(client):
    scenario, workload = scenario_text()
    overrides = [SMALL_WINDOWS]
    r = client.post("/api/sweep", json={
        "scenario": yaml.safe_dump(scenario), "workload": workload,
        "overrides": "\n".join(overrides), "rates": "0.5,1,2", "seeds": "1", "wait": True})
    assert r.status_code == 200, r.text
    result = serving_api.sweep(inline(scenario, workload), rates=[0.5, 1, 2],
                               overrides=overrides)
    assert r.json()["data"] == json.loads(json.dumps(result.data))
    bad = client.post("/api/sweep", json={"scenario": yaml.safe_dump(scenario),
                                          "rates": "1,x", "wait": True})
    assert bad.status_code == 422
    assert bad.json()["error"] == ("rates: 'x' is not a number; give auto or comma-separated "
                                   "loads such as 1,2,4")


def test_train_equals_the_api(client):
    from napkin.api import training

    r = client.get("/api/train", params={"model": "llama-3.1-8b", "seq": "8192",
                                         "devices": "8", "zero": "3", "tokens": "1e9",
                                         "precision": "fp8", "compile": "true"})
    assert r.status_code == 200, r.text
    expected = training.train("llama-3.1-8b", seq=8192, devices=8, zero=3, tokens=1e9,
                              precision="fp8", compiled=True)
    assert r.json()["data"] == json.loads(json.dumps(expected.data))
    bad = client.get("/api/train", params={"model": "llama-3.1-8b", "seq": "0"})
    assert bad.status_code == 422 and bad.json()["error"].startswith("seq")


def test_each_page_links_its_docs_and_docs_answer(client, tmp_path):
    from napkin.web.pages import DOCS, docs_site

    for page, doc in DOCS.items():
        assert f'href="/docs/{doc}/"' in client.get(f"/{page}").text, page
    r = client.get("/docs/planning/")  # unbuilt: a page saying where its source lives
    assert r.status_code == 200
    assert docs_site() is not None or "docs/planning.md" in r.text
    with pytest.raises(NapkinError, match=r"docs: .* holds no built site"):
        create_app(docs_dir=tmp_path)
    (tmp_path / "planning").mkdir()
    (tmp_path / "index.html").write_text("<h1>napkin</h1>")
    (tmp_path / "planning" / "index.html").write_text("<h1>Planning</h1>")
    built = TestClient(create_app(docs_dir=tmp_path))
    assert built.get("/docs/planning/").text == "<h1>Planning</h1>"


# --- files on the server's machine


def _secret(tmp_path: Path) -> tuple[str, str]:
    """A file outside every folder the server may read, and its content."""
    path = tmp_path / "outside" / "secret.yaml"
    path.parent.mkdir()
    content = "name: SECRET-CONTENT-7f3a\narrivals: {kind: poisson, rate_per_s: 1}\n"
    path.write_text(content)
    return str(path), "SECRET-CONTENT-7f3a"


def _requests(target: str) -> list[tuple[str, str, dict]]:
    """Every input field of every endpoint, naming ``target``."""
    scenario, workload = scenario_text()
    text = yaml.safe_dump(scenario)
    plan = yaml.safe_load(SMALL_PLAN)
    out: list[tuple[str, str, dict]] = []
    for route in ("/api/model", "/api/decode", "/api/capacity", "/api/train"):
        out.append(("get", route, {"model": target}))
    for route in ("/api/simulate", "/api/sweep"):
        base = {"scenario": text, "workload": workload, "wait": True}
        out += [("post", route, {**base, "scenario": yaml.safe_dump({**scenario,
                                                                     "workload": target})}),
                ("post", route, {**base, "scenario": yaml.safe_dump({**scenario,
                                                                     "model": target})}),
                ("post", route, {**base, "scenario": yaml.safe_dump({**scenario,
                                                                     "calibration": target})}),
                ("post", route, {**base, "workload": yaml.safe_dump(
                    {"arrivals": {"kind": "trace", "format": "azure", "path": target}})}),
                *[("post", route, {**base, "overrides": f"{key}={target}"})
                  for key in ("workload", "model", "calibration", "workload.arrivals.path")],
                ("post", route, {**base, "overrides": "workload={arrivals: {kind: trace, "
                                                      f"format: csv, path: '{target}'}}}}"})]
    for key in ("workload", "model", "calibration"):
        out.append(("post", "/api/plan", {"plan": yaml.safe_dump({**plan, key: target}),
                                          "wait": True}))
    out.append(("post", "/api/agent", {"trajectory": (EXAMPLES / "agent-dag.yaml").read_text(),
                                       "model": target}))
    return out


def test_no_field_reads_a_file_outside_the_data_folder(tmp_path):
    """Naming a file of the server's machine (``/etc/hostname``, or one outside the data
    folder) in any field is refused by field, and the answer quotes nothing of the file."""
    data = tmp_path / "data"
    data.mkdir()
    client = TestClient(create_app(upload_dir=tmp_path / "uploads", data_dir=data))
    secret, content = _secret(tmp_path)
    hostname = Path("/etc/hostname")
    host = hostname.read_text().strip() if hostname.is_file() else ""
    for target in (secret, "/etc/hostname", "../outside/secret.yaml", "~/.bashrc"):
        for method, route, body in _requests(target):
            r = (client.get(route, params=body) if method == "get"
                 else client.post(route, json=body))
            assert r.status_code == 422, (route, body, r.text)
            error = r.json()["error"]
            assert "is not a file this server may read" in error, (route, body, error)
            assert content not in r.text and (len(host) < 4 or host not in r.text), route


def test_a_file_in_the_data_folder_is_read_by_its_name(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    scenario, workload = scenario_text()
    small = yaml.safe_load(workload)
    windows = yaml.safe_load(SMALL_WINDOWS.split("=", 1)[1])
    small["arrivals"] = {"kind": "windows", "windows": windows}
    (data / "w.yaml").write_text(yaml.safe_dump(small))
    client = TestClient(create_app(upload_dir=tmp_path / "uploads", data_dir=data))
    r = client.post("/api/simulate", json={
        "scenario": yaml.safe_dump({**scenario, "workload": "w.yaml"}), "wait": True})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["scenarios"][0]["summary"]["requests"] == 40


# --- the server as a service: budgets, sizes, concurrency


def _long_simulation() -> dict:
    """The chapter's scenario at a load that runs for seconds (tens of thousands of requests)."""
    scenario, workload = scenario_text()
    return {"scenario": yaml.safe_dump(scenario), "workload": workload,
            "overrides": "workload.arrivals.windows=[{duration_s: 3000, rate_per_s: 20}]"}


def test_a_run_past_its_budget_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("NAPKIN_COMPILED", "0")  # (the compiled core runs it inside the budget)
    client = TestClient(create_app(upload_dir=tmp_path, job_budget_s=0.3))
    start = time.time()
    r = client.post("/api/simulate", json=_long_simulation())
    job = wait_job(client, r.json()["job"], timeout_s=60)
    assert job["status"] == "error"
    assert job["error"] == "time: the run passed this server's budget of 0.3 s and was stopped"
    assert time.time() - start < 20
    now = client.post("/api/simulate", json={**_long_simulation(), "wait": True})
    assert now.status_code == 422 and now.json()["error"].startswith("time: ")


def test_a_job_nobody_polls_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("NAPKIN_COMPILED", "0")  # (the compiled core runs it inside the budget)
    app = create_app(upload_dir=tmp_path, job_idle_s=0.3)
    client = TestClient(app)
    r = client.post("/api/simulate", json=_long_simulation())
    job_id = r.json()["job"]
    time.sleep(1.5)  # the client went away: nobody polls
    job = app.state.jobs._jobs[job_id]
    deadline = time.time() + 30
    while job["status"] == "running" and time.time() < deadline:
        time.sleep(0.05)
    assert job["status"] == "error"
    assert job["error"] == "client: nobody asked for this job for 0.3 s; it was stopped"


def test_a_body_past_the_limit_is_refused_before_it_is_read(client):
    from napkin.web.app import MAX_REQUEST_BYTES

    big = "#" * (MAX_REQUEST_BYTES + 1)
    r = client.post("/api/plan", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json()["error"] == (f"request: {MAX_REQUEST_BYTES + 1:,} bytes; at most "
                                 f"{MAX_REQUEST_BYTES:,} are read (upload large files through "
                                 "/api/upload)")


def test_concurrent_requests_get_their_own_answers(client):
    """24 requests at once on 8 threads (decode tables of different batches and models, and
    simulations of different batch caps): every answer is its own request's, none lost."""
    from concurrent.futures import ThreadPoolExecutor

    scenario, workload = scenario_text()
    cases: list[tuple[str, dict, Any]] = []
    for model in ("qwen3-0.6b", "qwen3-8b", "llama-3.1-8b"):
        for batch in ("1", "8", "64", "256"):
            cases.append(("decode", {"model": model, "gpu": "h100-sxm", "batch": batch,
                                     "context": "1024"},
                          inference_api.decode_table(model, gpu="h100-sxm", batch=[int(batch)],
                                                     context=1024).data))
    for seqs in range(2, 14):
        cases.append(("simulate", {"scenario": yaml.safe_dump(scenario), "workload": workload,
                                   "overrides": f"{SMALL_WINDOWS}\nengine.max_num_seqs={seqs}",
                                   "wait": True}, seqs))

    def one(case: tuple[str, dict, Any]) -> tuple[tuple[str, dict, Any], dict]:
        kind, body, _ = case
        r = (client.get("/api/decode", params=body) if kind == "decode"
             else client.post("/api/simulate", json=body))
        assert r.status_code == 200, r.text
        return case, r.json()

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, cases))
    assert len(answers) == len(cases)
    sims = {}
    for (kind, _, expected), got in answers:
        if kind == "decode":
            assert got["data"] == json.loads(json.dumps(expected))
        else:
            sims[expected] = got["data"]["scenarios"][0]["summary"]
    # each run is its own request's: rerun two alone and compare
    for seqs in (2, 9):
        alone = serving_api.simulate(inline(scenario, workload), overrides=[
            SMALL_WINDOWS, f"engine.max_num_seqs={seqs}"]).data["scenarios"][0]["summary"]
        assert sims[seqs] == json.loads(json.dumps(alone))
    assert len({json.dumps(s, sort_keys=True) for s in sims.values()}) > 1
