"""``napkin web`` in a real browser: Debian's Chromium driven by Playwright against uvicorn on a
free port. Each of the four pages is loaded, its inputs changed and run; the numbers shown are
compared with the public API called here with the same inputs; one bad input per page shows the
CLI's error line. Full-page screenshots go to ``test-artifacts/web/``.

Without Chromium (or Playwright, or the web extra) these tests are skipped, unless
``NAPKIN_REQUIRE_BROWSER=1`` (CI), where that is a failure.
"""

import copy
import csv
import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml
from web_inputs import SMALL_PLAN, SMALL_WINDOWS

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "web"
REQUIRED = os.environ.get("NAPKIN_REQUIRE_BROWSER") == "1"
TIMEOUT_MS = 60_000


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason}, and NAPKIN_REQUIRE_BROWSER=1 requires the browser tests",
                    pytrace=False)
    pytest.skip(reason)


def _chromium() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        import uvicorn

        from napkin.web.app import create_app
    except ImportError as e:
        _unavailable(f"the web extra is missing ({e.name}): pip install 'napkin[web]'")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(upload_dir=tmp_path_factory.mktemp("uploads"))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started:
        if time.time() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start", pytrace=False)
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser_context():
    chromium = _chromium()
    if chromium is None:
        _unavailable("no Chromium: neither `chromium` on PATH nor /usr/bin/chromium "
                     "(apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is missing (pip install 'napkin[test]')")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(TIMEOUT_MS)
        yield context
        context.close()
        browser.close()


@pytest.fixture
def page(browser_context, server):
    pg = browser_context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.base = server
    yield pg
    pg.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


# --- helpers


def open_page(page, path: str, states=("ok", "ready")) -> None:
    page.goto(page.base + path)
    wait_state(page, states)


def wait_state(page, states) -> str:
    page.wait_for_function(f"{json.dumps(list(states))}.includes(document.body.dataset.state)")
    return page.evaluate("document.body.dataset.state")


def submit(page, expect: str = "ok") -> None:
    """Click the page's run button and wait for the run to end (``ok`` or ``error``)."""
    page.evaluate("document.body.dataset.state = ''")
    page.click("#run")
    state = wait_state(page, ("ok", "error"))
    if state != expect:
        shown = page.inner_text("#error") if page.is_visible("#error") else ""
        raise AssertionError(f"expected {expect}, got {state}: {shown}")


def value(page, selector: str):
    raw = page.get_attribute(selector, "data-value")
    assert raw is not None, f"{selector} shows no value"
    return json.loads(raw)


def shown(text: str) -> float:
    """The number in a cell's text (thousands separators dropped)."""
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text)
    assert m, f"no number in {text!r}"
    return float(m.group().replace(",", ""))


def decimals(text: str) -> int:
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def assert_shows(text: str, expected: float, scale: float = 1.0) -> None:
    """``text`` shows ``expected / scale`` to the digits it prints."""
    assert shown(text) == pytest.approx(expected / scale, abs=0.51 * 10 ** -decimals(text))


def assert_shows_time(text: str, seconds: float) -> None:
    """A duration printed as the CLI does: ms below one second, s above."""
    assert text.endswith(" ms") or text.endswith(" s"), text
    assert_shows(text, seconds, 1e-3 if text.endswith(" ms") else 1.0)


def assert_shows_bytes(text: str, n_bytes: float) -> None:
    """Bytes printed in GB, MB or KB (decimal units)."""
    unit = text.rsplit(" ", 1)[-1]
    assert_shows(text, n_bytes, {"GB": 1e9, "MB": 1e6, "KB": 1e3}[unit])


def fact(page, container: str, key: str):
    sel = f'{container} [data-key="{key}"]'
    return value(page, sel), page.inner_text(sel)


def error_line(page) -> str:
    page.wait_for_selector("#error", state="visible")
    return page.inner_text("#error")


def api_error(fn, *args, **kwargs) -> str:
    from napkin.errors import NapkinError

    with pytest.raises(NapkinError) as info:
        fn(*args, **kwargs)
    return f"napkin: error: {info.value}"


def plot_data(page, element_id: str) -> list[dict]:
    """The traces Plotly drew in ``element_id``: name, x, y."""
    return page.evaluate(f"document.getElementById({element_id!r}).data.map(t => ("
                         "{name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || [])}))")


def screenshot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


# --- the pages


def test_index_links_the_four_pages(page):
    page.goto(page.base + "/")
    links = page.eval_on_selector_all("main a", "els => els.map(a => a.getAttribute('href'))")
    assert {"/model", "/scenario", "/plan", "/trajectory"} <= set(links)
    screenshot(page, "index")


def test_model_gpu_page(page):
    from napkin.api import catalog, inference

    open_page(page, "/model", states=("ok",))  # computes the defaults on load
    params, text = fact(page, "#model-facts", "params")
    assert params == catalog.describe_model("llama-3.1-8b").data["params"]
    assert text == f"{params:,}"

    page.fill("#model", "qwen3-8b")
    page.select_option("#gpu", "h200")
    page.fill("#batch", "1,64,256,1024,2048")
    page.fill("#context", "256")
    page.fill("#count", "2")
    page.fill("#avg_context", "128")
    submit(page)

    model = catalog.describe_model("qwen3-8b").data
    for key in ("params", "active_params", "weights_bytes", "kv_bytes_per_token", "num_layers"):
        got, text = fact(page, "#model-facts", key)
        assert got == model[key], key
    assert_shows(page.inner_text('#model-facts [data-key="weights_bytes"]'),
                 model["weights_bytes"], 1e9)
    assert page.inner_text('#model-facts [data-key="kv_bytes_per_token"]').startswith(
        f"{model['kv_bytes_per_token']:,} B")

    decode = inference.decode_table("qwen3-8b", gpu="h200", batch=[1, 64, 256, 1024, 2048],
                                    context=256).data
    assert page.inner_text("#gpu-title") == "GPU: h200"
    mem, text = fact(page, "#gpu-facts", "gpu_memory_bytes")
    assert mem == decode["assumptions"]["gpu_memory_bytes"]
    rows = page.locator("#decode-table tbody tr")
    assert rows.count() == len(decode["rows"])
    for i, row in enumerate(decode["rows"]):
        cells = rows.nth(i)
        for key, scale in (("batch", 1), ("memory_bytes", 1e9), ("step.compute_s", 1e-3),
                           ("step.memory_s", 1e-3), ("step_s", 1e-3), ("tokens_per_s", 1),
                           ("tokens_per_s_per_user", 1)):
            cell = cells.locator(f'td[data-key="{key}"]')
            expected = row
            for part in key.split("."):
                expected = expected[part]
            assert json.loads(cell.get_attribute("data-value")) == expected, (i, key)
            assert_shows(cell.inner_text(), expected, scale)
        assert cells.locator('td[data-key="step.bound"]').inner_text() == row["step"]["bound"]
        assert cells.locator('td[data-key="fits"]').inner_text() == (
            "yes" if row["fits"] else "no")
    crossing = decode["compute_bound_batch"]  # between the last memory- and first compute-bound
    listed = next(r["batch"] for r in decode["rows"] if r["step"]["bound"] == "compute")
    assert 256 < crossing <= listed == 1024
    assert value(page, "#crossover") == crossing
    assert "crossover" in page.inner_text("#crossover") and f"{crossing:,}" in page.inner_text(
        "#crossover")
    step_plot = plot_data(page, "plot-step")
    assert [t["name"] for t in step_plot] == ["compute", "memory", "step"]
    assert step_plot[0]["y"] == pytest.approx([r["step"]["compute_s"] * 1e3
                                               for r in decode["rows"]])
    assert len(plot_data(page, "plot-tput")) == 2 and len(plot_data(page, "plot-mem")) == 2

    cap = inference.capacity("qwen3-8b", gpu="h200", count=2, context=256,
                             avg_context=128).data["capacity"]
    for key in ("users", "users_avg", "kv_bytes_per_user", "kv_budget_bytes"):
        got, text = fact(page, "#capacity-facts", key)
        assert got == cap[key], key
        if key.endswith("_bytes") or key.endswith("_user"):
            assert_shows_bytes(text, got)
    assert page.inner_text('#capacity-facts [data-key="users"]') == f"{cap['users']:,}"
    page.click("#cli summary")  # the tables as the CLI prints them, opened for the screenshot
    screenshot(page, "model-gpu")

    page.fill("#model", "no-such-model")
    submit(page, expect="error")
    assert error_line(page) == api_error(catalog.describe_model, "no-such-model")
    assert "stale" in page.get_attribute("#results", "class")  # the last good results, dimmed
    page.fill("#model", "qwen3-8b")
    page.fill("#batch", "1,x")
    submit(page, expect="error")
    assert error_line(page) == ("napkin: error: batch: '1,x' must be comma-separated integers, "
                                "e.g. 1,8,16")
    screenshot(page, "model-gpu-error")


def _scenario_inputs(page) -> dict:
    scenario = yaml.safe_load(page.input_value("#scenario"))
    workload = page.input_value("#workload")
    if workload.strip():
        scenario = copy.deepcopy(scenario)
        scenario["workload"] = yaml.safe_load(workload)
    return scenario


def test_scenario_runner_page(page):
    from napkin.api import serving

    open_page(page, "/scenario")
    assert page.input_value("#preset") == "chapter-3-1-uniform.yaml"
    assert "chapter 3-1 uniform" in page.input_value("#scenario")
    assert "classes:" in page.input_value("#workload")
    overrides = [SMALL_WINDOWS, "engine.max_num_seqs=32"]
    page.fill("#overrides", "\n".join(overrides))
    page.fill("#seed", "2")
    submit(page)
    assert page.inner_text("#progress-text").startswith("done")

    expected = serving.simulate(_scenario_inputs(page), overrides=overrides, seed=2).data
    (scenario,) = expected["scenarios"]
    summary = scenario["summary"]
    for metric in ("ttft", "tpot", "e2e", "queue_wait", "first_schedule_wait"):
        row = page.locator(f'#latency-table tr[data-metric="{metric}"]')
        for stat in ("mean_s", "p50_s", "p90_s", "p95_s", "p99_s"):
            cell = row.locator(f'td[data-key="{stat}"]')
            assert json.loads(cell.get_attribute("data-value")) == summary[metric][stat]
            assert_shows_time(cell.inner_text(), summary[metric][stat])
    got, text = fact(page, "#summary-facts", "requests")
    assert got == summary["requests"] == 40 and text == "40"
    for key, scale in (("output_tokens_per_s", 1), ("slo_met_frac", 0.01),
                       ("goodput_requests_per_s", 1), ("peak_kv_frac", 0.01),
                       ("preemptions", 1)):
        got, text = fact(page, "#summary-facts", key)
        assert got == summary[key], key
        assert_shows(text, got, scale)
    got, _ = fact(page, "#summary-facts", "kv_pool_bytes")
    assert got == scenario["inputs"]["kv_pool_bytes"]
    queue = plot_data(page, "plot-queue")
    assert [t["name"] for t in queue] == [f"{scenario['name']} waiting",
                                          f"{scenario['name']} running"]
    cdf = plot_data(page, "plot-cdf-ttft")
    assert len(cdf[0]["x"]) == 40 and cdf[0]["y"][-1] == 1
    assert cdf[1]["x"] == [summary["ttft"]["p50_s"], summary["ttft"]["p95_s"],
                           summary["ttft"]["p99_s"]]
    assert len(plot_data(page, "plot-kv")) == 1 and plot_data(page, "plot-cdf-e2e")
    screenshot(page, "scenario")

    bad = ["engine.max_num_seqs=0"]
    page.fill("#overrides", bad[0])
    submit(page, expect="error")
    assert error_line(page) == api_error(serving.simulate, _scenario_inputs(page), overrides=bad,
                                         seed=2)
    screenshot(page, "scenario-error")


def test_planner_page(page):
    from napkin.api import planning

    open_page(page, "/plan")
    assert page.input_value("#preset") == "plan-llama-70b-fp8.yaml"
    assert "search:" in page.input_value("#plan")
    page.fill("#plan", SMALL_PLAN)
    page.fill("#jobs", "1")
    page.fill("#top", "5")
    submit(page)
    assert page.inner_text("#progress-text").startswith("done")

    expected = planning.plan(yaml.safe_load(SMALL_PLAN), jobs=1, top=5).data
    best = expected["cheapest"]
    for key, scale in (("gpus", 1), ("usd_per_hour", 1), ("usd_per_m_output_tokens", 1),
                       ("output_tokens_per_s_per_gpu", 1), ("tokens_per_s_per_user", 1),
                       ("slo_met_frac", 0.01)):
        got, text = fact(page, "#cheapest-facts", key)
        assert got == best[key], key
        assert_shows(text, got, scale)
    for key in ("p95_ttft_s", "p95_tpot_s"):
        got, text = fact(page, "#cheapest-facts", key)
        assert got == best[key]
        assert_shows_time(text, got)
    config = f"{best['replicas']} × {best['gpu']} tp{best['tensor_parallel']}"
    assert page.inner_text('#cheapest-facts [data-key="configuration"]') == config
    for engine, cmd in expected["launch"].items():
        assert page.inner_text(f'#launch pre[data-engine="{engine}"]') == cmd
    first = page.locator("#ranked tbody tr").first.locator("td")
    assert first.nth(1).inner_text() == f"{best['replicas']}× {best['gpu']} " \
                                        f"tp{best['tensor_parallel']}"
    assert_shows(first.nth(6).inner_text(), best["usd_per_hour"])
    pareto = plot_data(page, "plot-pareto")
    feasible = [e for e in expected["evaluations"] if e["status"] == "feasible"
                and e["tokens_per_s_per_user"] is not None]
    assert sum(len(t["x"]) for t in pareto if t["name"].endswith("(feasible)")) == len(feasible)
    assert pareto[-1]["name"] == "cheapest"
    assert pareto[-1]["x"] == [best["tokens_per_s_per_user"]]
    got, _ = fact(page, "#search-facts", "candidates")
    assert got == expected["search"]["candidates"]
    screenshot(page, "plan")

    bad = SMALL_PLAN.replace("gpus: [h200, b200]", "gpus: [h999]")
    page.fill("#plan", bad)
    submit(page, expect="error")
    assert error_line(page) == api_error(planning.plan, yaml.safe_load(bad), jobs=1, top=5)
    screenshot(page, "plan-error")


def test_trajectory_viewer_page(page):
    from napkin.api import agents

    open_page(page, "/trajectory", states=("ok",))  # analyzes the first preset on load
    dag = agents.analyze_trajectory(yaml.safe_load(page.input_value("#trajectory"))).data
    got, text = fact(page, "#task-facts", "critical_path_s")
    assert got == dag["critical_path_s"] == 15 and text == "15.000 s"

    page.select_option("#preset", "agent-branches.yaml")
    page.wait_for_function("document.getElementById('trajectory').value.includes('branch_a')")
    page.select_option("#gpu", "h100-sxm")
    page.fill("#speedup", "kind:tool=2")
    submit(page)
    expected = agents.analyze_trajectory(yaml.safe_load(page.input_value("#trajectory")),
                                         gpu="h100-sxm", speedup=["kind:tool=2"]).data
    for key in ("critical_path_s", "serial_s", "parallel_saving_s", "state.dag.gib_seconds",
                "state.serial.gib_seconds", "state.dag.peak_bytes", "speedup.speedup",
                "speedup.after_s"):
        want = expected
        for part in key.split("."):
            want = want[part]
        got, text = fact(page, "#task-facts", key)
        assert got == want, key
        assert_shows(text, got, 2 ** 30 if key.endswith("peak_bytes") else 1)
    assert page.inner_text('#task-facts [data-key="critical_path"]') == " → ".join(
        expected["critical_path"])
    timeline = plot_data(page, "plot-timeline")
    assert sorted(t["name"] for t in timeline) == sorted({s["kind"] for s in expected["spans"]})
    spans = {s["id"]: s for s in expected["spans"]}
    for t in timeline:
        for step, duration in zip(t["y"], t["x"], strict=True):
            assert duration == pytest.approx(spans[step]["duration_s"])
    state = plot_data(page, "plot-state")
    assert state[0]["x"] == expected["state"]["dag"]["curve"]["times_s"]
    steps = page.locator("#sections .cli-section").first
    assert steps.locator("h3").inner_text() == "Steps"
    screenshot(page, "trajectory")

    page.fill("#speedup", "draft_a=0")
    submit(page, expect="error")
    assert error_line(page) == api_error(
        agents.analyze_trajectory, yaml.safe_load(page.input_value("#trajectory")),
        gpu="h100-sxm", speedup=["draft_a=0"])
    screenshot(page, "trajectory-error")


def test_scenario_runner_uploads_a_trace(page, tmp_path):
    from napkin.api import serving

    trace = tmp_path / "my-trace.csv"
    trace.write_text("timestamp,input_tokens,output_tokens\n"
                     + "".join(f"{0.5 * i:.1f},{512 + 16 * i},{64}\n" for i in range(30)))
    open_page(page, "/scenario")
    page.set_input_files("#trace-file", str(trace))
    page.wait_for_function("document.getElementById('workload').value.includes('kind: trace')")
    workload = yaml.safe_load(page.input_value("#workload"))
    assert workload["arrivals"]["format"] == "csv"
    assert Path(workload["arrivals"]["path"]).read_text() == trace.read_text()
    assert (workload["arrivals"]["arrival_column"], workload["arrivals"]["input_column"],
            workload["arrivals"]["output_column"]) == ("timestamp", "input_tokens",
                                                       "output_tokens")
    submit(page)
    summary = serving.simulate(_scenario_inputs(page)).data["scenarios"][0]["summary"]
    got, text = fact(page, "#summary-facts", "requests")
    assert got == summary["requests"] == 30 and text == "30"
    cell = page.locator('#latency-table tr[data-metric="ttft"] td[data-key="p95_s"]')
    assert json.loads(cell.get_attribute("data-value")) == summary["ttft"]["p95_s"]
    assert_shows_time(cell.inner_text(), summary["ttft"]["p95_s"])
    screenshot(page, "scenario-trace")


def test_an_uploaded_scenario_runs_its_own_workload(page, tmp_path):
    """Issue 36's case: a Qwen3-32B scenario with its own workload (2,000 in / 500 out,
    Poisson 2 req/s, here for 15 s) uploaded over the chapter preset runs that workload — not
    the chapter's 40 requests at 4 req/s left in the workload box."""
    from napkin.api import serving

    mine = {"name": "my qwen3-32b", "model": "qwen3-32b", "gpu": "h100-sxm",
            "engine": {"backend": "vllm"},
            "workload": {"name": "mine", "seed": 3,
                         "classes": {"chat": {"input_tokens": 2000, "output_tokens": 500}},
                         "arrivals": {"kind": "poisson", "rate_per_s": 2, "duration_s": 15}}}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(mine))
    open_page(page, "/scenario")
    assert "classes:" in page.input_value("#workload")  # the preset's
    page.set_input_files("#scenario-file", str(path))
    page.wait_for_function("document.body.dataset.uploaded === 'mine.yaml'")
    assert page.input_value("#workload") == ""
    assert "mine.yaml runs its own workload" in page.inner_text("#workload-note")
    submit(page)
    summary = serving.simulate(mine).data["scenarios"][0]["summary"]
    got, text = fact(page, "#summary-facts", "requests")
    assert got == summary["requests"] and text == str(summary["requests"])
    assert 15 < got < 50  # about 2 req/s × 15 s, not the chapter's 40 at 4 req/s


# --- downloads


def _download(page, link, tmp_path) -> Path:
    with page.expect_download() as info:
        link.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path


def _check_downloads(page, tmp_path) -> dict:
    """Every table has a CSV link holding its cells (numbers raw), every figure PNG and SVG
    links, the result a JSON link. Chromium stops a tab's downloads after ten, so one CSV, the
    JSON and one figure's PNG and SVG are downloaded; the other CSVs are read from their
    links. Returns the JSON."""
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    tables = page.locator("table.data")
    assert tables.count() > 0
    for i in range(tables.count()):
        t = tables.nth(i)
        bar = t.locator("xpath=following-sibling::div[contains(@class, 'downloads')][1]")
        link = bar.get_by_text("CSV", exact=True)
        if i == 0:
            text = _download(page, link, tmp_path).read_text()
        else:
            text = link.evaluate("a => fetch(a.href).then(r => r.text())")
        rows = list(csv.reader(text.splitlines()))
        cells = t.evaluate("t => Array.from(t.rows).map(r => Array.from(r.cells).map(c => "
                           "c.dataset.value !== undefined ? JSON.parse(c.dataset.value) : "
                           "c.textContent))")
        assert len(rows) == len(cells), i
        for got, want in zip(rows, cells, strict=True):
            assert len(got) == len(want), (i, got, want)
            for g, w in zip(got, want, strict=True):
                assert (float(g) == w) if isinstance(w, int | float) else g == w, (i, g, w)
    result = _download(page, page.locator("a.download", has_text="JSON").first, tmp_path)
    figures = page.locator(".js-plotly-plot")
    for i in range(figures.count()):
        bar = page.locator(f'div.downloads[data-figure="{figures.nth(i).get_attribute("id")}"]')
        assert bar.get_by_text("PNG", exact=True).count() == 1
        assert bar.get_by_text("SVG", exact=True).count() == 1
        if i == 0:
            png = _download(page, bar.get_by_text("PNG", exact=True), tmp_path)
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
            svg = _download(page, bar.get_by_text("SVG", exact=True), tmp_path)
            assert svg.read_text().lstrip().startswith("<svg")
    return json.loads(result.read_text())


def test_model_page_downloads(page, tmp_path):
    open_page(page, "/model", states=("ok",))
    data = _check_downloads(page, tmp_path)
    assert set(data) == {"model", "decode", "capacity"}


def test_trajectory_page_downloads(page, tmp_path):
    from napkin.api import agents

    open_page(page, "/trajectory", states=("ok",))
    data = _check_downloads(page, tmp_path)
    expected = agents.analyze_trajectory(yaml.safe_load(page.input_value("#trajectory"))).data
    assert data["critical_path"] == expected["critical_path"]


def test_scenario_page_downloads(page, tmp_path):
    open_page(page, "/scenario")
    page.fill("#overrides", SMALL_WINDOWS)
    submit(page)
    data = _check_downloads(page, tmp_path)
    assert data["scenarios"]


def test_plan_page_downloads(page, tmp_path):
    from napkin.api import planning

    open_page(page, "/plan")
    page.fill("#plan", SMALL_PLAN)
    page.fill("#jobs", "1")
    submit(page)
    data = _check_downloads(page, tmp_path)
    expected = planning.plan(yaml.safe_load(SMALL_PLAN), jobs=1).data
    assert data["cheapest"] == json.loads(json.dumps(expected["cheapest"]))


def test_sweep_page(page, tmp_path):
    from napkin.api import serving

    open_page(page, "/sweep")
    assert page.input_value("#preset") == "chapter-3-1-uniform.yaml"
    page.fill("#overrides", SMALL_WINDOWS)
    page.fill("#rates", "0.5,1,2")
    submit(page)
    scenario = yaml.safe_load(page.input_value("#scenario"))
    scenario["workload"] = yaml.safe_load(page.input_value("#workload"))
    expected = serving.sweep(scenario, rates=[0.5, 1, 2], overrides=[SMALL_WINDOWS]).data
    got, text = fact(page, "#sweep-facts", "max_sustainable")
    assert got == expected["max_sustainable"]
    assert_shows(text, got)
    band_low, _ = fact(page, "#sweep-facts", "band_low")
    assert band_low == expected["band"][0]
    rows = page.locator("#points-table tbody tr")
    assert rows.count() == len(expected["points"])
    for i, p in enumerate(expected["points"]):
        cell = rows.nth(i).locator('td[data-key="p_slo_met"]')
        if p["p_slo_met"] is None:
            assert cell.inner_text() == "–", i
        else:
            assert json.loads(cell.get_attribute("data-value")) == p["p_slo_met"], i
    data = _check_downloads(page, tmp_path)
    assert data["max_sustainable"] == expected["max_sustainable"]
    screenshot(page, "sweep")


def test_training_page(page, tmp_path):
    from napkin.api import training

    open_page(page, "/train", states=("ok",))  # computes the defaults on load
    expected = training.train("llama-3.1-8b", seq=8192, devices=8, zero=3).data
    got, text = fact(page, "#update-facts", "update_s")
    assert got == expected["update_s"]
    assert_shows_time(text, got)
    got, _ = fact(page, "#update-facts", "memory.total_bytes")
    assert got == expected["memory"]["total_bytes"]
    page.fill("#tokens", "1e9")
    page.select_option("#precision", "fp8")
    submit(page)
    expected = training.train("llama-3.1-8b", seq=8192, devices=8, zero=3, tokens=1e9,
                              precision="fp8").data
    got, _ = fact(page, "#run-facts", "run.gpu_hours")
    assert got == expected["run"]["gpu_hours"]
    _check_downloads(page, tmp_path)
    screenshot(page, "train")
    page.fill("#seq", "0")
    submit(page, expect="error")
    assert error_line(page) == api_error(training.train, "llama-3.1-8b", seq=0, devices=8,
                                         zero=3, tokens=1e9, precision="fp8")


@pytest.mark.parametrize(("path", "doc"), [("/model", "inference"), ("/scenario", "serving"),
                                           ("/sweep", "serving"), ("/plan", "planning"),
                                           ("/train", "training"),
                                           ("/trajectory", "agents")])
def test_every_input_links_its_docs(page, path, doc):
    open_page(page, path, states=("ok", "ready"))
    inputs = page.eval_on_selector_all(
        "#form label", "ls => ls.filter(l => l.querySelector('input[name], select[name], "
        "textarea[name]')).map(l => { const a = l.querySelector('a.doc'); "
        "return a ? a.getAttribute('href') : null; })")
    assert inputs and all(h is not None and h.startswith(f"/docs/{doc}/#") for h in inputs)
    assert page.get_attribute("header a.docs", "href") == f"/docs/{doc}/"
