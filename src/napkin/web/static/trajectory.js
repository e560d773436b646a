// Trajectory viewer: POST /api/agent (one trajectory, or several for cost per success).
"use strict";

(async () => {
  const {fmt} = napkin;
  const $ = (id) => document.getElementById(id);
  const form = $("form");
  const run = $("run");
  let logged = null;  // several files picked at once: [{name, text}]

  $("trajectory-file").addEventListener("change", pickFiles);
  napkin.docLinks(form, "agents", "trajectories", {speedup: "speedup"});
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    analyze();
  });
  try {
    await napkin.fillCatalog($("models"), $("gpu"));
    const first = await napkin.presets($("preset"), "trajectory", "agent-dag.yaml", (p) => {
      $("trajectory").value = p.text;
      setLogged(null);
    });
    if (first) {
      await analyze();
    } else {
      napkin.done("ready");
    }
  } catch (e) {
    napkin.showError(e.message);
    napkin.done("error");
  }

  function setLogged(files) {
    logged = files && files.length > 1 ? files : null;
    $("files-note").hidden = !logged;
    $("files-note").textContent = logged
      ? `${logged.length} files, analyzed as a logged set: ${logged.map((f) => f.name).join(", ")}`
      : "";
  }

  async function pickFiles() {
    const files = [...$("trajectory-file").files];
    if (!files.length) return;
    const texts = await Promise.all(files.map(async (f) => ({name: f.name, text: await f.text()})));
    $("trajectory").value = texts[0].text;
    setLogged(texts);
  }

  async function analyze() {
    napkin.clearError();
    napkin.busy(run, true);
    napkin.done("running");
    const v = napkin.values(form);
    const body = {speedup: v.speedup, model: v.model, gpu: v.gpu, weights: v.weights,
                  kv_dtype: v.kv_dtype, mfu: v.mfu, mbu: v.mbu};
    if (logged) body.trajectories = logged.map((f) => f.text);
    else body.trajectory = v.trajectory;
    try {
      const result = await napkin.post("/api/agent", body);
      if (result.data.tasks) renderLogged(result);
      else render(result);
      napkin.done("ok");
    } catch (e) {
      napkin.showError(e.message);
      napkin.done("error");
    } finally {
      napkin.busy(run, false);
    }
  }

  function sections(result) {
    const box = $("sections");
    box.replaceChildren(napkin.downloads([napkin.jsonLink(result.data, "result")]),
                        ...result.tables.map((t) => napkin.cliSection(t)));
  }

  function render(result) {
    $("results").hidden = false;
    $("plots-card").hidden = false;
    const d = result.data;
    $("task-title").textContent = result.title;
    const kinds = Object.entries(d.time_by_kind_s).map(([kind, s]) => [
      `${kind} time (share of step time)`, s,
      (x) => `${fmt.s(x)} (${fmt.pct(d.shares[kind])})`, `time_by_kind_s.${kind}`]);
    const items = [
      ["critical path (as drawn)", d.critical_path_s, fmt.s, "critical_path_s"],
      ["serial: every step one after another", d.serial_s, fmt.s, "serial_s"],
      ["saved by running independent steps together", d.parallel_saving_s, fmt.s,
       "parallel_saving_s"],
      ["critical path", d.critical_path.join(" → "), null, "critical_path"],
      ...kinds,
      ["state peak (as drawn)", d.state.dag.peak_bytes, (x) => fmt.gib(x, 3), "state.dag.peak_bytes"],
      ["state held ∫M(t)dt, as drawn", d.state.dag.gib_seconds, (x) => `${fmt.num(x, 3)} GiB·s`,
       "state.dag.gib_seconds"],
      ["state held ∫M(t)dt, serial", d.state.serial.gib_seconds,
       (x) => `${fmt.num(x, 3)} GiB·s`, "state.serial.gib_seconds"],
      ["cost", d.cost.total_usd, (x) => fmt.usd(x, 6), "cost.total_usd"],
      ["first response", d.first_response_s, fmt.s, "first_response_s"],
      ["finish", d.finish_s, fmt.s, "finish_s"],
    ];
    if (d.speedup) {
      items.push(["whole-task speedup", d.speedup.speedup, (x) => `${fmt.num(x, 3)}×`,
                  "speedup.speedup"],
                 ["task after the speedup", d.speedup.after_s, fmt.s, "speedup.after_s"],
                 ["Amdahl 1/((1−f)+f/s)", d.speedup.amdahl, (x) => `${fmt.num(x, 3)}×`,
                  "speedup.amdahl"]);
    }
    if (d.playback) {
      items.push(["first audio plays", d.playback.first_play_s, fmt.s, "playback.first_play_s"],
                 ["gaps / total stall", `${d.playback.gaps} / ${fmt.s(d.playback.total_stall_s)}`,
                  null, "playback.gaps"]);
    }
    napkin.facts($("task-facts"), items);

    const onPath = new Set(d.critical_path);
    const order = d.spans.map((s) => s.id);
    const traces = [];
    for (const kind of [...new Set(d.spans.map((s) => s.kind))]) {
      const spans = d.spans.filter((s) => s.kind === kind);
      traces.push({
        type: "bar", orientation: "h", name: kind, y: spans.map((s) => s.id),
        x: spans.map((s) => s.duration_s), base: spans.map((s) => s.start_s),
        text: spans.map((s) => `${fmt.num(s.duration_s, 3)} s`), textposition: "inside",
        hovertemplate: "%{y}: %{base:.3f} → %{x:.3f} s<extra>" + kind + "</extra>",
        marker: {line: {color: spans.map((s) => (onPath.has(s.id) ? "#b3261e" : "#fff")),
                        width: spans.map((s) => (onPath.has(s.id) ? 3 : 1))}},
      });
    }
    napkin.plot($("plot-timeline"), traces, {
      title: {text: "timeline as drawn (critical path outlined red)"}, barmode: "overlay",
      xaxis: {title: {text: "seconds"}},
      yaxis: {categoryorder: "array", categoryarray: order, autorange: "reversed"},
      height: Math.max(300, 80 + 28 * order.length)});
    stateCurve(d.state.dag.curve, "state held M(t), as drawn");
    sections(result);
  }

  function stateCurve(curve, title) {
    const bytes = curve.bytes_;
    napkin.plot($("plot-state"), [{
      x: curve.times_s, y: [...bytes, bytes.length ? bytes[bytes.length - 1] : 0].map(
        (b) => b / 2 ** 30), mode: "lines", line: {shape: "hv"}, fill: "tozeroy",
      name: "state held"}], {
      title: {text: `${title}: peak ${fmt.gib(curve.peak_bytes, 3)}, ` +
                    `∫M(t)dt ${fmt.num(curve.gib_seconds, 3)} GiB·s`},
      xaxis: {title: {text: "seconds"}}, yaxis: {title: {text: "GiB"}}, showlegend: false});
  }

  function renderLogged(result) {
    $("results").hidden = false;
    const d = result.data;
    $("task-title").textContent = result.title;
    napkin.facts($("task-facts"), [
      ["tasks", d.attempts, fmt.int, "attempts"],
      ["passed", d.successes, fmt.int, "successes"],
      ["total cost", d.total_cost, (x) => fmt.usd(x, 6), "total_cost"],
      ["cost per success", d.cost_per_success, (x) => fmt.usd(x, 6), "cost_per_success"],
      ["state of all tasks: peak", d.state.peak_bytes, (x) => fmt.gib(x, 3), "state.peak_bytes"],
      ["state held ∫M(t)dt", d.state.gib_seconds, (x) => `${fmt.num(x, 3)} GiB·s`,
       "state.gib_seconds"],
    ]);
    Plotly.purge($("plot-timeline"));
    stateCurve(d.state.curve, "state of all tasks (offset by arrival)");
    sections(result);
  }
})();
