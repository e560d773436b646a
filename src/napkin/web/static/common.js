// napkin web: requests to the JSON API, the error line, number formats, tables, plots, jobs.
"use strict";

const napkin = (() => {
  // --- requests: the API answers {"error": "<one line>"} on bad input
  async function request(url, options) {
    let resp;
    try {
      resp = await fetch(url, options);
    } catch (e) {
      throw new Error(`server: cannot reach the napkin server (${e.message})`);
    }
    let body;
    try {
      body = await resp.json();
    } catch (e) {
      throw new Error(`server: HTTP ${resp.status} without a JSON answer`);
    }
    if (!resp.ok) throw new Error(body.error || `HTTP ${resp.status}`);
    return body;
  }

  function get(url, params) {
    if (!params) return request(url);
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v !== undefined && v !== null && String(v).trim() !== "") query.set(k, v);
    }
    return request(`${url}?${query}`);
  }

  function post(url, body) {
    return request(url, {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify(body),
    });
  }

  async function upload(file) {
    const form = new FormData();
    form.append("file", file);
    return request("/api/upload", {method: "POST", body: form});
  }

  // --- the error line, as the CLI prints it
  function showError(message) {
    const el = document.getElementById("error");
    el.textContent = `napkin: error: ${message}`;
    el.hidden = false;
  }

  function clearError() {
    const el = document.getElementById("error");
    el.textContent = "";
    el.hidden = true;
  }

  // --- numbers (the raw value travels in data-value; the text is for people)
  const en = (x, digits) => Number(x).toLocaleString("en-US", {
    minimumFractionDigits: digits, maximumFractionDigits: digits,
  });
  const fmt = {
    int: (x) => en(Math.round(x), 0),
    num: (x, d = 2) => en(x, d),
    gb: (b, d = 2) => `${en(b / 1e9, d)} GB`,
    // bytes in GB, or MB / KB when smaller
    bytes: (b, d = 2) => (Math.abs(b) >= 1e9 ? `${en(b / 1e9, d)} GB`
      : Math.abs(b) >= 1e6 ? `${en(b / 1e6, d)} MB` : `${en(b / 1e3, d)} KB`),
    gib: (b, d = 2) => `${en(b / 2 ** 30, d)} GiB`,
    ms: (s, d = 3) => `${en(s * 1e3, d)} ms`,
    s: (s, d = 3) => `${en(s, d)} s`,
    // a duration as the CLI prints it: ms below one second, s above
    time: (s, d = 3) => (Math.abs(s) < 1 ? `${en(s * 1e3, d)} ms` : `${en(s, d)} s`),
    pct: (f, d = 1) => `${en(f * 100, d)} %`,
    usd: (x, d = 2) => `$${en(x, d)}`,
    tflops: (x, d = 1) => `${en(x / 1e12, d)} TFLOP/s`,
    gbs: (x, d = 0) => `${en(x / 1e9, d)} GB/s`,
  };

  function isNum(x) {
    return typeof x === "number" && Number.isFinite(x);
  }

  // a fact: label, raw value, formatter; key names the field for tests (data-key)
  function facts(container, items) {
    container.replaceChildren();
    for (const item of items) {
      const [label, value, format, key] = item;
      const box = document.createElement("div");
      box.className = "fact";
      const l = document.createElement("div");
      l.className = "label";
      l.textContent = label;
      const v = document.createElement("div");
      v.className = "value";
      if (key) v.dataset.key = key;
      if (value === null || value === undefined) {
        v.textContent = "–";
      } else {
        v.dataset.value = JSON.stringify(value);
        v.textContent = format ? format(value) : String(value);
      }
      box.append(l, v);
      container.append(box);
    }
  }

  // a field by dotted path: pick(row, "step.compute_s")
  function pick(obj, path) {
    return path.split(".").reduce((o, k) => (o === null || o === undefined ? o : o[k]), obj);
  }

  // a table: columns [label, key, formatter?, numeric?]; rows: objects
  function table(container, columns, rows, rowClass) {
    const t = document.createElement("table");
    t.className = "data";
    const head = t.createTHead().insertRow();
    for (const [label] of columns) {
      const th = document.createElement("th");
      th.textContent = label;
      head.append(th);
    }
    const body = t.createTBody();
    rows.forEach((row, i) => {
      const tr = body.insertRow();
      if (rowClass) tr.className = rowClass(row, i) || "";
      for (const [, key, format] of columns) {
        const td = tr.insertCell();
        const value = typeof key === "function" ? key(row) : pick(row, key);
        td.dataset.key = typeof key === "function" ? "" : key;
        if (isNum(value)) {
          td.classList.add("n");
          td.dataset.value = JSON.stringify(value);
        }
        td.textContent = value === null || value === undefined ? "–"
          : format ? format(value) : String(value);
      }
    });
    container.replaceChildren(t, downloads(csvLinks(t, container.id || "table")));
    return t;
  }

  // --- downloads: every table as CSV, every figure as PNG and SVG, a result as JSON
  function slug(text) {
    return String(text || "napkin").toLowerCase().replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "").slice(0, 60) || "napkin";
  }

  function csvCell(text) {
    const s = String(text);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }

  // a table's cells as CSV: numbers as their raw value (data-value), the rest as shown
  function tableCsv(t) {
    const lines = [];
    for (const tr of t.rows) {
      lines.push([...tr.cells].map((c) => csvCell(
        c.dataset.value !== undefined ? JSON.parse(c.dataset.value) : c.textContent)).join(","));
    }
    return lines.join("\n") + "\n";
  }

  function link(label, filename, make) {
    const a = document.createElement("a");
    a.href = "#";
    a.className = "download";
    a.textContent = label;
    a.download = filename;
    a.dataset.download = filename;
    a.addEventListener("click", async (ev) => {
      ev.preventDefault();
      const blob = await make();
      const url = URL.createObjectURL(blob);
      const tmp = document.createElement("a");
      tmp.href = url;
      tmp.download = filename;
      document.body.append(tmp);
      tmp.click();
      tmp.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    });
    return a;
  }

  function downloads(links) {
    const bar = document.createElement("div");
    bar.className = "downloads";
    bar.append("download: ", ...links.flatMap((l, i) => (i ? [" · ", l] : [l])));
    return bar;
  }

  // a link straight to a blob made now (a plain download, no script on click)
  function blobLink(label, filename, blob) {
    const a = document.createElement("a");
    a.className = "download";
    a.textContent = label;
    a.download = filename;
    a.dataset.download = filename;
    a.href = URL.createObjectURL(blob);
    return a;
  }

  function csvLinks(t, name) {
    return [blobLink("CSV", `${slug(name)}.csv`, new Blob([tableCsv(t)], {type: "text/csv"}))];
  }

  function jsonLink(data, name) {
    return blobLink("JSON", `${slug(name)}.json`,
                    new Blob([JSON.stringify(data, null, 1)], {type: "application/json"}));
  }

  function figureLinks(el, name) {
    const image = (format) => async () => {
      const url = await Plotly.toImage(el, {format, width: 1200, height: 700});
      return (await fetch(url)).blob();
    };
    return [link("PNG", `${slug(name)}.png`, image("png")),
            link("SVG", `${slug(name)}.svg`, image("svg"))];
  }

  // the tables the CLI prints (already formatted cells), with their notes
  // data: the result's JSON payload, offered as a download beside the tables
  function cliTables(container, tables, title, data) {
    container.replaceChildren();
    if (data !== undefined) container.append(downloads([jsonLink(data, "result")]));
    const details = document.createElement("details");
    details.className = "cli";
    const summary = document.createElement("summary");
    summary.textContent = title || "as the CLI prints it";
    details.append(summary);
    for (const section of tables) details.append(cliSection(section));
    container.append(details);
  }

  function cliSection(section) {
    const box = document.createElement("div");
    box.className = "cli-section";
    const h = document.createElement("h3");
    h.textContent = section.title;
    const t = document.createElement("table");
    t.className = "data";
    if (section.columns.some((c) => c)) {
      const head = t.createTHead().insertRow();
      for (const c of section.columns) {
        const th = document.createElement("th");
        th.textContent = c;
        head.append(th);
      }
    }
    const body = t.createTBody();
    for (const row of section.rows) {
      const tr = body.insertRow();
      for (const cell of row) tr.insertCell().textContent = cell;
    }
    box.append(h, t, downloads(csvLinks(t, section.title)));
    if (section.notes.length) {
      const ul = document.createElement("ul");
      ul.className = "notes";
      for (const n of section.notes) {
        const li = document.createElement("li");
        li.textContent = n;
        if (n.startsWith("warning")) li.className = "warn";
        ul.append(li);
      }
      box.append(ul);
    }
    return box;
  }

  // --- plots (Plotly, shipped with the plotly package)
  const baseLayout = {
    margin: {l: 60, r: 16, t: 36, b: 80},
    font: {family: "system-ui, DejaVu Sans, sans-serif", size: 12},
    legend: {orientation: "h", y: -0.3},
    paper_bgcolor: "#fff", plot_bgcolor: "#fff",
  };

  // a figure, with PNG and SVG downloads under it (added once per figure element)
  function plot(el, traces, layout) {
    const merged = {...baseLayout, ...layout};
    const shown = Plotly.react(el, traces, merged, {responsive: true, displaylogo: false});
    const next = el.nextElementSibling;
    if (!(next && next.classList.contains("downloads") && next.dataset.figure === el.id)) {
      const bar = downloads(figureLinks(el, el.id || "figure"));
      bar.dataset.figure = el.id;
      el.insertAdjacentElement("afterend", bar);
    }
    return shown;
  }

  // --- background jobs: poll until done; onProgress(progress, elapsed_s)
  async function pollJob(id, onProgress, intervalMs = 150) {
    for (;;) {
      const job = await get(`/api/jobs/${id}`);
      if (onProgress) onProgress(job.progress || {}, job.elapsed_s, job.status);
      if (job.status === "done") return job.result;
      if (job.status === "error") throw new Error(job.error);
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }

  // --- forms
  function values(form) {
    const out = {};
    for (const el of form.elements) {
      if (!el.name || el.type === "file") continue;
      out[el.name] = el.type === "checkbox" ? el.checked : el.value;
    }
    return out;
  }

  function readFile(input, textarea) {
    input.addEventListener("change", async () => {
      if (input.files.length) textarea.value = await input.files[0].text();
    });
  }

  // --- the catalog: model ids into a datalist, accelerators into a select
  async function fillCatalog(modelList, gpuSelect) {
    const [models, gpus] = await Promise.all([get("/api/models"), get("/api/gpus")]);
    for (const m of models.data.models) {
      const o = document.createElement("option");
      o.value = m.id;
      o.label = m.hf_repo;
      modelList.append(o);
    }
    for (const a of gpus.data.accelerators) {
      const o = document.createElement("option");
      o.value = a.id;
      o.textContent = `${a.id} — ${a.name}`;
      gpuSelect.append(o);
    }
  }

  // --- presets: the shipped examples of a kind in a select; choosing one calls apply(preset)
  async function presets(select, kind, preferred, apply) {
    const names = (await get("/api/presets"))[kind];
    for (const name of names) {
      const o = document.createElement("option");
      o.value = name;
      o.textContent = name;
      select.append(o);
    }
    const load = async (name) => {
      if (name) apply(await get(`/api/presets/${encodeURIComponent(name)}`));
    };
    select.addEventListener("change", () => load(select.value));
    const first = names.includes(preferred) ? preferred : names[0];
    if (first) {
      select.value = first;
      await load(first);
    }
    return first;
  }

  // a "docs" link after each labelled input: its page of the documentation
  // (anchors: {input name: heading id}; others go to `anchor`, the page's main section)
  function docLinks(form, page, anchor, anchors = {}) {
    for (const label of form.querySelectorAll("label")) {
      const input = label.querySelector("input[name], select[name], textarea[name]");
      if (!input || label.querySelector("a.doc")) continue;
      const a = document.createElement("a");
      a.className = "doc";
      a.href = `/docs/${page}/#${anchors[input.name] || anchor}`;
      a.target = "_blank";
      a.rel = "noopener";
      a.title = `docs/${page}.md: ${input.name}`;
      a.textContent = "docs";
      a.dataset.input = input.name;
      label.insertBefore(a, input);
    }
  }

  // one run of a page: the button disabled and the page's state set while `work` runs, "ok"
  // after it; on an error the error line ("error"), after `onError` tidies the page
  async function attempt(button, work, onError) {
    clearError();
    busy(button, true);
    done("running");
    try {
      await work();
      done("ok");
    } catch (e) {
      if (onError) onError(e);
      showError(e.message);
      done("error");
    } finally {
      busy(button, false);
    }
  }

  function busy(button, on) {
    button.disabled = on;
    document.body.dataset.busy = on ? "1" : "0";
  }

  function done(state) {
    // tests wait on this: "ok" or "error" after each run; after an error the last good
    // results stay, dimmed
    document.body.dataset.state = state;
    const results = document.getElementById("results");
    if (results && state !== "running") results.classList.toggle("stale", state === "error");
  }

  return {get, post, upload, pick, showError, clearError, fmt, isNum, facts, table, cliTables,
          cliSection, plot, pollJob, values, readFile, fillCatalog, presets, busy,
          done, attempt, downloads, jsonLink, docLinks};
})();
