// Planner: POST /api/plan as a background job, polled for progress.
"use strict";

(async () => {
  const {fmt} = napkin;
  const $ = (id) => document.getElementById(id);
  const form = $("form");
  const run = $("run");

  napkin.readFile($("plan-file"), $("plan"));
  napkin.docLinks(form, "planning", "napkin-plan-planyaml-jobs-n-plot-paretopng-export-allcsvparquetjson");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    plan();
  });
  try {
    await napkin.presets($("preset"), "plan", null, (p) => { $("plan").value = p.text; });
    napkin.done("ready");
  } catch (e) {
    napkin.showError(e.message);
    napkin.done("error");
  }

  function showProgress(p, elapsed, status) {
    $("progress-box").hidden = false;
    const bar = $("progress");
    if (p.total) {
      bar.max = p.total;
      bar.value = p.done;
    } else {
      bar.removeAttribute("value");
    }
    let text = `loading the plan… ${fmt.num(elapsed, 1)} s`;
    if (status === "done") text = `done in ${fmt.num(elapsed, 1)} s`;
    else if (p.total && p.done >= p.total) {
      text = `${p.done} / ${p.total} configuration groups; finding the maximum rate of the ` +
             `cheapest per GPU type… ${fmt.num(elapsed, 1)} s`;
    } else if (p.total) {
      text = `${p.done} / ${p.total} configuration groups evaluated, ${fmt.num(elapsed, 1)} s`;
    }
    $("progress-text").textContent = text;
  }

  function plan() {
    const v = napkin.values(form);
    return napkin.attempt(run, async () => {
      const {job} = await napkin.post("/api/plan", {plan: v.plan, jobs: v.jobs, top: v.top});
      render(await napkin.pollJob(job, showProgress, 250));
    }, () => { $("progress-box").hidden = true; });
  }

  function config(e) {
    const layout = e.prefill_replicas ? `${e.prefill_replicas}P${e.replicas}D` : `${e.replicas} ×`;
    return `${layout} ${e.gpu} ${e.parallel}`;
  }

  function render(result) {
    $("results").hidden = false;
    const d = result.data;
    const best = d.cheapest;
    $("cheapest-title").textContent = best ? `Cheapest configuration: ${config(best)}`
      : "No feasible configuration";
    napkin.facts($("cheapest-facts"), best ? [
      ["configuration", config(best), null, "configuration"],
      ["GPUs", best.gpus, fmt.int, "gpus"],
      ["engine", best.backend, null, "backend"],
      ["weights / KV", `${best.weights} / ${best.kv_dtype}`, null, "precision"],
      ["max seqs / token budget", `${best.max_num_seqs} / ${best.max_num_batched_tokens}`, null,
       "engine_limits"],
      ["$/hour", best.usd_per_hour, fmt.usd, "usd_per_hour"],
      ["$ per million output tokens", best.usd_per_m_output_tokens, (x) => fmt.usd(x, 3),
       "usd_per_m_output_tokens"],
      ["output tokens/s per GPU", best.output_tokens_per_s_per_gpu, fmt.int,
       "output_tokens_per_s_per_gpu"],
      ["tokens/s per user", best.tokens_per_s_per_user, (x) => fmt.num(x, 1),
       "tokens_per_s_per_user"],
      ["SLO met (worst seed)", best.slo_met_frac, fmt.pct, "slo_met_frac"],
      ["p95 TTFT", best.p95_ttft_s, fmt.time, "p95_ttft_s"],
      ["p95 TPOT", best.p95_tpot_s, fmt.time, "p95_tpot_s"],
    ] : []);
    const launch = $("launch");
    launch.replaceChildren();
    if (d.launch) {
      for (const [engine, cmd] of Object.entries(d.launch)) {
        const label = document.createElement("div");
        label.className = "muted";
        label.textContent = engine + (best && engine === best.backend ? " (planned on)" : "");
        const pre = document.createElement("pre");
        pre.className = "cmd";
        pre.dataset.engine = engine;
        pre.textContent = cmd;
        launch.append(label, pre);
      }
      const note = result.tables[0].notes.at(-1);
      if (note) {
        const p = document.createElement("p");
        p.className = "muted";
        p.textContent = note;
        launch.append(p);
      }
    } else {
      const p = document.createElement("p");
      p.textContent = result.tables[0].notes.join(" ");
      launch.append(p);
    }

    const ranked = result.tables.find((t) => t.title.startsWith("feasible configurations"));
    if (ranked) {
      $("ranked-title").textContent = ranked.title;
      const box = napkin.cliSection({...ranked, notes: []});
      box.querySelector("h3").remove();
      $("ranked").replaceChildren(box);
      $("ranked-notes").replaceChildren(...ranked.notes.map((n) => {
        const li = document.createElement("li");
        li.textContent = n;
        return li;
      }));
    }
    napkin.table($("by-gpu"), [
      ["GPU", "gpu"], ["configuration", (e) => config(e)], ["GPUs", "gpus", fmt.int],
      ["$/hour", "usd_per_hour", fmt.usd],
      ["$/M out", "usd_per_m_output_tokens", (x) => fmt.usd(x, 3)],
      ["max requests/s", "max_requests_per_s", (x) => fmt.num(x, 3)],
    ], d.max_sustainable_rate);
    napkin.table($("side-by-side"), [
      ["GPU", "gpu"], ["best settings", "parallel"], ["engine", "backend"],
      ["req/s per GPU", "requests_per_s_per_gpu", (x) => fmt.num(x, 3)],
      ["out tok/s/GPU", "output_tokens_per_s_per_gpu", fmt.int],
      ["tok/s/user", "tokens_per_s_per_user", (x) => fmt.num(x, 1)],
      ["$/M out", "usd_per_m_output_tokens", (x) => fmt.usd(x, 3)],
      ["kWh/M out", "energy_kwh_per_m_output_tokens", (x) => fmt.num(x, 3)],
    ], Object.values(d.gpus_side_by_side));
    const search = result.tables.find((t) => t.title === "search");
    napkin.facts($("search-facts"), [
      ["candidates", d.search.candidates, fmt.int, "candidates"],
      ["simulations (configuration × seed)", d.search.simulations, fmt.int, "simulations"],
      ["wall time", result.timing.wall_s, (x) => fmt.s(x, 1), "wall_s"],
      ["worker processes", d.search.jobs, fmt.int, "jobs"],
      ...(search ? search.rows.filter((r) => r[0].startsWith("pruned") ||
                                            r[0].startsWith("simulated"))
        .map((r) => [r[0], r[1], null, null]) : []),
    ]);
    pareto(d, best);
    napkin.cliTables($("cli"), result.tables, undefined, result.data);
  }

  function pareto(d, best) {
    const sim = d.evaluations.filter((e) => napkin.isNum(e.tokens_per_s_per_user) &&
                                            napkin.isNum(e.output_tokens_per_s_per_gpu));
    const hover = (e) => `${config(e)} ${e.backend} seqs ${e.max_num_seqs}<br>` +
      `${fmt.usd(e.usd_per_hour)}/h, ${e.status}`;
    const traces = [];
    const gpus = [...new Set(sim.map((e) => e.gpu))].sort();
    for (const gpu of gpus) {
      const ok = sim.filter((e) => e.gpu === gpu && e.status === "feasible");
      traces.push({x: ok.map((e) => e.tokens_per_s_per_user),
                   y: ok.map((e) => e.output_tokens_per_s_per_gpu), text: ok.map(hover),
                   hoverinfo: "text+x+y", mode: "markers", name: `${gpu} (feasible)`});
    }
    const bad = sim.filter((e) => e.status !== "feasible");
    traces.push({x: bad.map((e) => e.tokens_per_s_per_user),
                 y: bad.map((e) => e.output_tokens_per_s_per_gpu), text: bad.map(hover),
                 hoverinfo: "text+x+y", mode: "markers", name: "misses the SLO",
                 marker: {symbol: "x", color: "#999", size: 7}});
    // the frontier, as the library computes it (indices into the evaluations)
    const front = d.pareto.map((i) => d.evaluations[i]);
    if (front.length) {
      traces.push({x: front.map((e) => e.tokens_per_s_per_user),
                   y: front.map((e) => e.output_tokens_per_s_per_gpu), mode: "lines",
                   name: "Pareto frontier", line: {color: "#111", width: 1}});
    }
    if (best) {
      traces.push({x: [best.tokens_per_s_per_user], y: [best.output_tokens_per_s_per_gpu],
                   mode: "markers", name: "cheapest", text: [hover(best)], hoverinfo: "text",
                   marker: {size: 16, color: "rgba(0,0,0,0)",
                            line: {color: "#b3261e", width: 2}}});
    }
    napkin.plot($("plot-pareto"), traces, {
      title: {text: "configurations: throughput per GPU vs speed per user"},
      xaxis: {title: {text: "tokens/s per user (1 / median TPOT)"}},
      yaxis: {title: {text: "output tokens/s per GPU"}}});
  }
})();
