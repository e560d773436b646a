// Scenario runner: POST /api/simulate as a background job, polled for progress.
"use strict";

(async () => {
  const {fmt} = napkin;
  const $ = (id) => document.getElementById(id);
  const form = $("form");
  const run = $("run");

  // an uploaded scenario replaces the whole preset: the workload box is emptied, so the file's
  // own workload runs unless a workload is put back in the box
  $("scenario-file").addEventListener("change", async () => {
    const file = $("scenario-file").files[0];
    if (!file) return;
    $("scenario").value = await file.text();
    $("workload").value = "";
    $("workload-note").textContent = `workload box emptied: ${file.name} runs its own workload `
      + "(a workload put here replaces it)";
    $("workload-note").hidden = false;
    document.body.dataset.uploaded = file.name;
  });
  napkin.readFile($("workload-file"), $("workload"));
  $("trace-file").addEventListener("change", uploadTrace);
  napkin.docLinks(form, "serving", "the-simulator", {workload: "workloads", overrides: "your-own-workload-and-scenario"});
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    simulate();
  });
  try {
    await napkin.presets($("preset"), "scenario", "chapter-3-1-uniform.yaml", (p) => {
      $("scenario").value = p.text;
      $("workload").value = p.workload ? p.workload.text : "";
      $("workload-note").hidden = true;
    });
    napkin.done("ready");
  } catch (e) {
    napkin.showError(e.message);
    napkin.done("error");
  }

  async function uploadTrace() {
    const file = $("trace-file").files[0];
    if (!file) return;
    napkin.clearError();
    try {
      const up = await napkin.upload(file);
      const lower = up.name.toLowerCase();
      const format = lower.endsWith(".parquet") ? "parquet"
        : lower.includes("burst") ? "burstgpt" : lower.includes("azure") ? "azure"
          : lower.includes("mooncake") || lower.endsWith(".jsonl") ? "mooncake" : "csv";
      const lines = [
        `# uploaded trace ${up.name} (${fmt.int(up.bytes)} bytes), kept on the server`,
        `name: ${up.name}`,
        "arrivals:",
        "  kind: trace",
        `  format: ${format}    # azure, burstgpt, mooncake, csv or parquet`,
        `  path: ${up.path}`,
        "  max_rows: 2000",
      ];
      if (format === "csv" || format === "parquet") lines.push(...await columns(file, format));
      $("workload").value = `${lines.join("\n")}\n`;
      $("trace-note").textContent = `uploaded to ${up.path}`;
      $("trace-note").hidden = false;
    } catch (e) {
      napkin.showError(e.message);
    }
  }

  // csv and parquet traces name their columns: guessed from a CSV header, to be checked
  async function columns(file, format) {
    let names = [];
    if (format === "csv") {
      const head = (await file.slice(0, 8192).text()).split(/\r?\n/)[0];
      names = head.split(",").map((c) => c.trim().replace(/^"|"$/g, ""));
    }
    const find = (re, i) => names.find((n) => re.test(n)) || names[i] || "?";
    const arrival = find(/time|arriv/i, 0);
    const input = find(/input|prompt|context|request/i, 1);
    const output = find(/output|generat|response|complet/i, 2);
    return [
      `  arrival_column: ${arrival}` + (names.length ? `    # columns: ${names.join(", ")}` : ""),
      `  input_column: ${input}`,
      `  output_column: ${output}`,
      "  time_unit: s    # s, ms, us or datetime",
    ];
  }

  function showProgress(p, elapsed, status) {
    const box = $("progress-box");
    box.hidden = false;
    const bar = $("progress");
    if (p.requests) {
      bar.max = p.requests;
      bar.value = p.finished || 0;
    } else {
      bar.removeAttribute("value");  // arrivals depend on completions: no total known
    }
    const which = p.scenarios > 1 ? ` (${p.index} of ${p.scenarios})` : "";
    const count = p.requests ? `${fmt.int(p.finished || 0)} / ${fmt.int(p.requests)}`
      : fmt.int(p.finished || 0);
    $("progress-text").textContent = status === "done"
      ? `done: simulated in ${fmt.num(elapsed, 1)} s`
      : p.scenario === undefined ? `starting… ${fmt.num(elapsed, 1)} s`
        : `${p.scenario}${which}: ${count} requests finished, simulated clock ` +
          `${fmt.num(p.t_s || 0, 1)} s, ${fmt.num(elapsed, 1)} s elapsed`;
  }

  async function simulate() {
    napkin.clearError();
    napkin.busy(run, true);
    napkin.done("running");
    const v = napkin.values(form);
    try {
      const {job} = await napkin.post("/api/simulate", {
        scenario: v.scenario, workload: v.workload, overrides: v.overrides, mode: v.mode,
        seed: v.seed});
      const result = await napkin.pollJob(job, showProgress);
      render(result);
      napkin.done("ok");
    } catch (e) {
      $("progress-box").hidden = true;
      napkin.showError(e.message);
      napkin.done("error");
    } finally {
      napkin.busy(run, false);
    }
  }

  const METRICS = [["TTFT", "ttft"], ["TPOT", "tpot"], ["end-to-end", "e2e"],
                   ["queue wait", "queue_wait"], ["wait to first schedule",
                                                  "first_schedule_wait"]];

  function render(result) {
    $("results").hidden = false;
    const scenarios = result.data.scenarios;
    $("sim-title").textContent = `Latency: ${scenarios.map((s) => s.name).join(", ")}`;
    const rows = [];
    for (const [label, key] of METRICS) {
      for (const s of scenarios) rows.push({metric: label, key, scenario: s.name, ...s.summary[key]});
    }
    const t = fmt.time;
    napkin.table($("latency-table"), [
      ["metric", "metric"], ...(scenarios.length > 1 ? [["scenario", "scenario"]] : []),
      ["mean", "mean_s", t], ["p50", "p50_s", t], ["p90", "p90_s", t],
      ["p95", "p95_s", t], ["p99", "p99_s", t],
    ], rows).querySelectorAll("tbody tr").forEach((tr, i) => {
      tr.dataset.metric = rows[i].key;
      tr.dataset.scenario = rows[i].scenario;
    });
    const notes = result.tables.length ? result.tables[0].notes : [];
    $("warnings").replaceChildren(...notes.map((n) => {
      const li = document.createElement("li");
      li.textContent = n;
      if (n.startsWith("warning")) li.className = "warn";
      return li;
    }));

    const items = [];
    for (const s of scenarios) {
      const m = s.summary;
      const pre = scenarios.length > 1 ? `${s.name}: ` : "";
      items.push(
        [`${pre}requests`, m.requests, fmt.int, "requests"],
        [`${pre}makespan`, m.makespan_s, (x) => fmt.s(x, 1), "makespan_s"],
        [`${pre}output tokens/s`, m.output_tokens_per_s, (x) => fmt.num(x, 1),
         "output_tokens_per_s"],
        [`${pre}offered requests/s`, m.offered_requests_per_s, (x) => fmt.num(x, 3),
         "offered_requests_per_s"],
        [`${pre}served requests/s`, m.requests_per_s, (x) => fmt.num(x, 3), "requests_per_s"],
        [`${pre}SLO met`, m.slo_met_frac, fmt.pct, "slo_met_frac"],
        [`${pre}goodput, requests/s`, m.goodput_requests_per_s, (x) => fmt.num(x, 3),
         "goodput_requests_per_s"],
        [`${pre}preemptions`, m.preemptions, fmt.int, "preemptions"],
        [`${pre}KV pool`, s.inputs.kv_pool_bytes, fmt.gib, "kv_pool_bytes"],
        [`${pre}peak KV use`, m.peak_kv_frac, fmt.pct, "peak_kv_frac"],
        [`${pre}mean KV tokens held`, m.mean_kv_tokens, fmt.int, "mean_kv_tokens"],
        [`${pre}KV state held`, m.kv_state_gib_s, (x) => `${fmt.num(x, 1)} GiB·s`,
         "kv_state_gib_s"],
        [`${pre}overloaded`, m.overload_factor, (x) => `${fmt.num(x, 2)}× what it carries`,
         "overload_factor"],
        [`${pre}calibration`, s.inputs.calibration, null, "calibration"],
      );
    }
    napkin.facts($("summary-facts"), items);

    const queue = [];
    const kv = [];
    for (const s of result.series) {
      for (const e of s.engines) {
        const name = result.series.length > 1 || s.engines.length > 1
          ? `${s.name} · ${e.name}` : s.name;
        queue.push({x: e.t_s, y: e.waiting, name: `${name} waiting`, mode: "lines",
                    line: {shape: "hv"}});
        queue.push({x: e.t_s, y: e.running, name: `${name} running`, mode: "lines",
                    line: {shape: "hv", dash: "dot"}});
        kv.push({x: e.t_s, y: e.kv_blocks_used.map((b) => b / e.kv_blocks), name,
                 mode: "lines", line: {shape: "hv"}});
      }
    }
    const time = {title: {text: "simulated time, s"}};
    napkin.plot($("plot-queue"), queue, {title: {text: "requests waiting and running"},
                                         xaxis: time, yaxis: {title: {text: "requests"}}});
    napkin.plot($("plot-kv"), kv, {title: {text: "KV pool in use"}, xaxis: time,
                                   yaxis: {title: {text: "share of blocks"}, tickformat: ".0%",
                                           range: [0, 1.05]}});
    const inputs = scenarios[0].inputs;
    cdf($("plot-cdf-ttft"), result, scenarios, "ttft_s", "ttft", "TTFT", inputs.slo_ttft_s);
    cdf($("plot-cdf-tpot"), result, scenarios, "tpot_s", "tpot", "TPOT", inputs.slo_tpot_s);
    cdf($("plot-cdf-e2e"), result, scenarios, "e2e_s", "e2e", "end-to-end", inputs.slo_e2e_s);
    napkin.cliTables($("cli"), result.tables, undefined, result.data);
  }

  function cdf(el, result, scenarios, key, metric, label, slo) {
    const traces = [];
    result.series.forEach((s, i) => {
      traces.push({x: s.cdf[key].x, y: s.cdf[key].y, name: s.name, mode: "lines",
                   line: {shape: "hv"}});
      const lat = scenarios[i].summary[metric];
      traces.push({x: [lat.p50_s, lat.p95_s, lat.p99_s], y: [0.5, 0.95, 0.99],
                   text: ["p50", "p95", "p99"], mode: "markers+text", textposition: "middle right",
                   name: `${s.name} p50/p95/p99`, marker: {size: 7}, showlegend: false});
    });
    const shapes = napkin.isNum(slo) ? [{type: "line", x0: slo, x1: slo, yref: "paper", y0: 0,
                                         y1: 1, line: {color: "#b3261e", dash: "dot"}}] : [];
    napkin.plot(el, traces, {title: {text: `${label}, CDF` + (napkin.isNum(slo) ?
      ` (SLO ${fmt.ms(slo, 0)} dotted)` : "")}, xaxis: {title: {text: "seconds"}},
    yaxis: {title: {text: "share of requests"}, range: [0, 1.02]}, shapes});
  }
})();
