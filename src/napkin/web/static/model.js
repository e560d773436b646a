// Model × GPU: /api/model, /api/decode and /api/capacity for one form.
"use strict";

(async () => {
  const {fmt} = napkin;
  const form = document.getElementById("form");
  const run = document.getElementById("run");
  const $ = (id) => document.getElementById(id);

  try {
    await napkin.fillCatalog($("models"), $("gpu"));
    $("gpu").value = "h100-sxm";
  } catch (e) {
    napkin.showError(e.message);
  }
  for (const [k, v] of new URLSearchParams(location.search)) {
    if (form.elements[k]) form.elements[k].value = v;
  }
  napkin.docLinks(form, "inference", "one-call", {batch: "decode-steps-over-batch-sizes", context: "decode-steps-over-batch-sizes", count: "kv-capacity", avg_context: "kv-capacity", reserve_gb: "kv-capacity"});
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    compute();
  });
  compute();

  async function compute() {
    napkin.clearError();
    napkin.busy(run, true);
    const v = napkin.values(form);
    const shared = {model: v.model, gpu: v.gpu, weights: v.weights, kv_dtype: v.kv_dtype,
                    unquantized: v.unquantized, context: v.context, reserve_gb: v.reserve_gb};
    const answers = await Promise.allSettled([
      napkin.get("/api/model", {model: v.model, weights: v.weights, kv_dtype: v.kv_dtype,
                                unquantized: v.unquantized}),
      napkin.get("/api/decode", {...shared, batch: v.batch, mfu: v.mfu, mbu: v.mbu,
                                 overhead_ms: v.overhead_ms}),
      napkin.get("/api/capacity", {...shared, count: v.count, avg_context: v.avg_context}),
    ]);
    napkin.busy(run, false);
    const failed = answers.find((a) => a.status === "rejected");
    if (failed) {
      napkin.showError(failed.reason.message);
      napkin.done("error");
      return;
    }
    render(...answers.map((a) => a.value));
    history.replaceState(null, "", `?${new URLSearchParams(v)}`);
    napkin.done("ok");
  }

  function render(model, decode, capacity) {
    $("results").hidden = false;
    const m = model.data;
    const att = m.attention;
    $("model-title").textContent = `Model: ${m.model}`;
    napkin.facts($("model-facts"), [
      ["parameters", m.params, fmt.int, "params"],
      ["active parameters per token", m.active_params, fmt.int, "active_params"],
      ["embedding parameters", m.embedding_params, fmt.int, "embedding_params"],
      ["non-embedding parameters", m.non_embedding_params, fmt.int, "non_embedding_params"],
      ["layers", m.num_layers, fmt.int, "num_layers"],
      ["hidden size", m.hidden_size, fmt.int, "hidden_size"],
      ["attention", `${att.kind}: ${att.num_heads} heads, ${att.num_kv_heads} KV heads, ` +
                    `head dim ${att.qk_head_dim}`, null, "attention"],
      [`weights (${m.inputs.weights})`, m.weights_bytes, fmt.gb, "weights_bytes"],
      [`KV per token (${m.inputs.kv_dtype})`, m.kv_bytes_per_token,
       (b) => `${fmt.int(b)} B = ${fmt.num(b / 1024, 1)} KiB`, "kv_bytes_per_token"],
      ["weights read per decode step", m.decode_weight_bytes_per_step, fmt.gb,
       "decode_weight_bytes_per_step"],
      ["longest context", m.max_position_embeddings, fmt.int, "max_position_embeddings"],
    ]);

    const d = decode.data;
    const a = d.assumptions;
    $("gpu-title").textContent = `GPU: ${a.gpu}`;
    napkin.facts($("gpu-facts"), [
      ["memory", a.gpu_memory_bytes, fmt.gb, "gpu_memory_bytes"],
      ["bandwidth", a.gpu_mem_bytes_per_s, fmt.gbs, "gpu_mem_bytes_per_s"],
      [`dense peak (${a.compute})`, a.gpu_peak_flops_per_s, fmt.tflops, "gpu_peak_flops_per_s"],
      ["MFU / MBU", `${a.mfu} / ${a.mbu}`, null, "efficiency"],
    ]);

    const rows = d.rows;
    $("decode-title").textContent = decode.title;
    const listed = rows.find((r) => r.step.bound === "compute");
    const cross = d.compute_bound_batch !== undefined ? d.compute_bound_batch
      : (listed ? listed.batch : null);
    let text;
    if (d.compute_bound_batch !== undefined) {
      text = cross === null ? "the decode step stays memory-bound at every batch size"
        : `compute/memory crossover: the decode step turns compute-bound at batch ${fmt.int(cross)}`;
    } else if (listed) {
      text = `compute/memory crossover: compute-bound from batch ${fmt.int(listed.batch)} of ` +
             "those listed (compute time ≥ memory time); memory-bound below";
    } else {
      text = "no crossover among the batches listed: memory-bound at every one (up to " +
             `${fmt.int(rows[rows.length - 1].batch)}), the weights and KV read take longer ` +
             "than the FLOPs";
    }
    $("crossover").textContent = text;
    $("crossover").dataset.value = JSON.stringify(cross);
    napkin.table($("decode-table"), [
      ["batch", "batch", fmt.int],
      ["memory (weights + KV)", "memory_bytes", fmt.gb],
      ["fits", "fits", (x) => (x ? "yes" : "no")],
      ["compute", "step.compute_s", fmt.ms],
      ["memory time", "step.memory_s", fmt.ms],
      ["step", "step_s", fmt.ms],
      ["bound", "step.bound"],
      ["tokens/s", "tokens_per_s", (x) => fmt.num(x, 1)],
      ["tokens/s/user", "tokens_per_s_per_user", (x) => fmt.num(x, 1)],
    ], rows, (r) => (cross !== null && r.batch === cross ? "hl" : ""));

    const batches = rows.map((r) => r.batch);
    const shape = cross === null ? [] : [{
      type: "line", x0: cross, x1: cross, yref: "paper", y0: 0, y1: 1,
      line: {color: "#b3261e", dash: "dot", width: 1},
    }];
    const logx = {title: {text: "batch"}, type: "log", dtick: 1};
    napkin.plot($("plot-step"), [
      {x: batches, y: rows.map((r) => r.step.compute_s * 1e3), name: "compute", mode: "lines+markers"},
      {x: batches, y: rows.map((r) => r.step.memory_s * 1e3), name: "memory", mode: "lines+markers"},
      {x: batches, y: rows.map((r) => r.step_s * 1e3), name: "step", mode: "lines",
       line: {color: "#111", width: 1, dash: "dash"}},
    ], {title: {text: "decode step time, ms"}, xaxis: logx, yaxis: {type: "log", dtick: 1},
        shapes: shape});
    napkin.plot($("plot-tput"), [
      {x: batches, y: rows.map((r) => r.tokens_per_s), name: "tokens/s (all users)",
       mode: "lines+markers"},
      {x: batches, y: rows.map((r) => r.tokens_per_s_per_user), name: "tokens/s per user",
       mode: "lines+markers", yaxis: "y2"},
    ], {title: {text: "throughput"}, xaxis: logx, yaxis: {title: {text: "tokens/s"}},
        yaxis2: {title: {text: "per user"}, overlaying: "y", side: "right"}, shapes: shape,
        margin: {l: 60, r: 60, t: 36, b: 80}});
    napkin.plot($("plot-mem"), [
      {x: batches, y: rows.map((r) => r.memory_bytes / 1e9), name: "weights + KV",
       type: "bar", marker: {color: rows.map((r) => (r.fits ? "#2f6fde" : "#b3261e"))}},
      {x: batches, y: rows.map((r) => r.capacity_bytes / 1e9), name: "memory (less reserve)",
       mode: "lines", line: {color: "#111", dash: "dash"}},
    ], {title: {text: "memory held, GB"}, xaxis: {title: {text: "batch"}, type: "category"},
        yaxis: {range: [0, 1.1 * Math.max(...rows.map((r) => Math.max(r.memory_bytes,
                                                                          r.capacity_bytes))) / 1e9]}});

    const c = capacity.data.capacity;
    $("capacity-title").textContent = capacity.title;
    napkin.facts($("capacity-facts"), [
      [`users at ${fmt.int(c.context)} tokens`, c.users, fmt.int, "users"],
      [c.avg_context === null ? "users at an average context" :
        `users at ${fmt.int(c.avg_context)} tokens (average)`, c.users_avg, fmt.int, "users_avg"],
      ["KV per user", c.kv_bytes_per_user, fmt.bytes, "kv_bytes_per_user"],
      ["KV budget", c.kv_budget_bytes, fmt.gb, "kv_budget_bytes"],
      ["weights", c.weights_bytes, fmt.gb, "weights_bytes"],
      [`memory of ${c.devices} device(s)`, c.memory_bytes, fmt.gb, "memory_bytes"],
    ]);
    napkin.cliTables($("cli"), [...model.tables, ...decode.tables, ...capacity.tables],
                     undefined, {model: model.data, decode: decode.data,
                                 capacity: capacity.data});
  }
})();
