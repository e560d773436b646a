// Training: GET /api/train (napkin train) with the form's fields.
"use strict";

(async () => {
  const {fmt} = napkin;
  const $ = (id) => document.getElementById(id);
  const form = $("form");
  const run = $("run");

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    compute();
  });
  napkin.docLinks(form, "training", "one-update");
  try {
    await napkin.fillCatalog($("models"), $("gpu"));
    $("gpu").value = "h100-sxm";
    await compute();
  } catch (e) {
    napkin.showError(e.message);
    napkin.done("error");
  }

  function compute() {
    return napkin.attempt(run, async () => {
      const f = napkin.values(form);
      f.compile = f.compile ? "true" : "";
      render(await napkin.get("/api/train", f));
    });
  }

  function render(result) {
    $("results").hidden = false;
    const d = result.data;
    const m = d.memory;
    const band = d.tokens_per_s_band || [null, null];
    $("train-title").textContent = result.title;
    napkin.facts($("update-facts"), [
      ["update time", d.update_s, fmt.time, "update_s"],
      ["tokens/s (all GPUs)", d.tokens_per_s, fmt.int, "tokens_per_s"],
      ["tokens/s, band low", band[0], fmt.int, "tokens_per_s_band_low"],
      ["tokens/s, band high", band[1], fmt.int, "tokens_per_s_band_high"],
      ["MFU (PaLM's)", d.published_mfu, (x) => fmt.pct(x), "published_mfu"],
      ["GPUs", d.gpus, fmt.int, "gpus"],
      ["memory per device", m.total_bytes, fmt.gb, "memory.total_bytes"],
      ["fits", m.fits ? "yes" : "no", null, "memory.fits"],
      ["profile", d.training_profile || "–", null, "training_profile"],
    ]);
    $("train-warnings").replaceChildren(...(d.warnings || []).map((w) => {
      const li = document.createElement("li");
      li.className = "warn";
      li.textContent = `warning: ${w}`;
      return li;
    }));
    const parts = [["weights", m.state.weights_bytes], ["gradients", m.state.grads_bytes],
                   ["optimizer", m.state.optimizer_bytes],
                   ["activations", m.activations_bytes], ["logits", m.logits_bytes],
                   ["working", m.working_bytes], ["buffers", m.buffer_bytes],
                   ["allocator", m.allocator_bytes], ["reserve", m.reserve_bytes]]
      .filter(([, v]) => napkin.isNum(v) && v > 0);
    napkin.plot($("plot-memory"), [
      ...parts.map(([name, v]) => ({type: "bar", orientation: "h", name, y: ["per device"],
                                    x: [v / 1e9]})),
    ], {barmode: "stack", title: {text: `memory per device, GB (capacity ` +
        `${fmt.num(m.capacity_bytes / 1e9, 1)} GB)`}, xaxis: {title: {text: "GB"}},
        shapes: [{type: "line", x0: m.capacity_bytes / 1e9, x1: m.capacity_bytes / 1e9,
                  y0: -0.5, y1: 0.5, line: {color: "#b3261e", dash: "dot"}}], height: 260});
    const r = d.run;
    napkin.facts($("run-facts"), r ? [
      ["tokens", r.tokens, fmt.int, "run.tokens"],
      ["wall time", r.wall_s, (x) => `${fmt.num(x / 86400, 2)} days`, "run.wall_s"],
      ["goodput", r.goodput, (x) => fmt.pct(x), "run.goodput"],
      ["GPU-hours", r.gpu_hours, fmt.int, "run.gpu_hours"],
      ["cost", r.usd, fmt.usd, "run.usd"],
    ] : [["run", "give run tokens", null, "run"]]);
    napkin.cliTables($("cli"), result.tables, undefined, result.data);
  }
})();
