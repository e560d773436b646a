// Load sweep: POST /api/sweep as a background job.
"use strict";

(async () => {
  const {fmt} = napkin;
  const $ = (id) => document.getElementById(id);
  const form = $("form");
  const run = $("run");

  $("scenario-file").addEventListener("change", async () => {
    const file = $("scenario-file").files[0];
    if (!file) return;
    $("scenario").value = await file.text();
    $("workload").value = "";  // the file runs its own workload
  });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    sweep();
  });
  napkin.docLinks(form, "serving", "sweeps-the-maximum-sustainable-load");
  try {
    await napkin.presets($("preset"), "scenario", "chapter-3-1-uniform.yaml", (p) => {
      $("scenario").value = p.text;
      $("workload").value = p.workload ? p.workload.text : "";
    });
    napkin.done("ready");
  } catch (e) {
    napkin.showError(e.message);
    napkin.done("error");
  }

  function sweep() {
    $("progress-box").hidden = false;
    $("progress").removeAttribute("value");
    $("progress-text").textContent = "sweeping";
    return napkin.attempt(run, async () => {
      const {job} = await napkin.post("/api/sweep", napkin.values(form));
      const result = await napkin.pollJob(job, (_p, elapsed) => {
        $("progress-text").textContent = `sweeping (${fmt.num(elapsed || 0, 1)} s)`;
      });
      $("progress").value = 1;
      $("progress-text").textContent = "done";
      render(result);
    }, () => { $("progress-box").hidden = true; });
  }

  function render(result) {
    $("results").hidden = false;
    const d = result.data;
    const unit = d.unit;
    const band = d.band || [null, null];
    $("sweep-title").textContent = `Maximum sustainable load, ${unit}`;
    napkin.facts($("sweep-facts"), [
      ["maximum sustainable", d.max_sustainable, (x) => fmt.num(x, 3), "max_sustainable"],
      ["80 % band, low", band[0], (x) => fmt.num(x, 3), "band_low"],
      ["80 % band, high", band[1], (x) => fmt.num(x, 3), "band_high"],
      [`sure (P ≥ ${fmt.num(d.confidence, 2)})`, d.sure, (x) => fmt.num(x, 3), "sure"],
      ["capacity (all at once)", d.capacity, (x) => fmt.num(x, 3), "capacity"],
      ["the scenario's own load", d.base_load, (x) => fmt.num(x, 3), "base_load"],
    ]);
    const section = result.tables[0];
    $("sweep-notes").replaceChildren(...section.notes.slice(0, 1).map((n) => {
      const li = document.createElement("li");
      li.textContent = n;
      return li;
    }));
    const rows = d.points.map((p) => {
      const worst = p.summaries.length ? p.summaries.reduce(
        (a, b) => (b.slo_met_frac < a.slo_met_frac ? b : a)) : null;
      return {
        load: p.load, sustainable: p.sustainable ? "yes" : "no",
        slo_met_frac: p.stopped || !worst ? null : worst.slo_met_frac,
        p_slo_met: p.p_slo_met,
        p95_ttft_s: p.stopped || !worst ? null : worst.ttft.p95_s,
        p95_tpot_s: p.stopped || !worst ? null : worst.tpot.p95_s,
        output_tokens_per_s: p.stopped || !worst ? null : worst.output_tokens_per_s,
        kwh: p.energy ? p.energy.kwh_per_m_output_tokens : null,
        flag: p.stopped ? "stopped early" : p.over_capacity ? "over capacity"
          : p.queue_growing ? "queue growing" : "",
      };
    });
    napkin.table($("points-table"), [
      [`load, ${unit}`, "load", (x) => fmt.num(x, 4)],
      ["SLO met", "slo_met_frac", (x) => fmt.pct(x)],
      ["P(SLO met)", "p_slo_met", (x) => fmt.num(x, 2)],
      ["p95 TTFT", "p95_ttft_s", fmt.time],
      ["p95 TPOT", "p95_tpot_s", fmt.time],
      ["output tokens/s", "output_tokens_per_s", fmt.int],
      ["kWh/M out", "kwh", (x) => fmt.num(x, 3)],
      ["sustainable", "sustainable"], ["", "flag"],
    ], rows);
    const full = rows.filter((r) => napkin.isNum(r.slo_met_frac));
    const loads = full.map((r) => r.load);
    napkin.plot($("plot-slo"), [
      {x: loads, y: full.map((r) => r.slo_met_frac), name: "SLO met (worst seed)",
       mode: "lines+markers"},
      {x: loads, y: full.map((r) => r.p_slo_met), name: "P(SLO met)", mode: "lines+markers"},
    ], {title: {text: "SLO attainment and confidence"}, xaxis: {title: {text: unit}},
        yaxis: {range: [0, 1.05]},
        shapes: d.max_sustainable ? [{type: "line", x0: d.max_sustainable,
                                      x1: d.max_sustainable, y0: 0, y1: 1.05,
                                      line: {dash: "dot", color: "#b3261e"}}] : []});
    napkin.plot($("plot-latency"), [
      {x: loads, y: full.map((r) => r.p95_ttft_s), name: "p95 TTFT, s", mode: "lines+markers"},
      {x: loads, y: full.map((r) => r.p95_tpot_s), name: "p95 TPOT, s", mode: "lines+markers",
       yaxis: "y2"},
    ], {title: {text: "latency"}, xaxis: {title: {text: unit}},
        yaxis: {title: {text: "TTFT, s"}, type: "log"},
        yaxis2: {title: {text: "TPOT, s"}, overlaying: "y", side: "right"}});
    napkin.cliTables($("cli"), result.tables, undefined, result.data);
  }
})();
