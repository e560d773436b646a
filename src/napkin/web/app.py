"""The ``napkin web`` ASGI app: JSON endpoints over :mod:`napkin.api` and four static pages.

Every endpoint turns form fields into the API's keyword arguments, calls one API function and
returns its :class:`~napkin.api.result.Result` as ``{"title", "data", "tables"}``: ``data`` is
the CLI's ``--format json`` payload (base units), ``tables`` the sections the CLI prints
(already formatted cells). Bad input is the CLI's one line: HTTP 422 ``{"error": message}``
for a :class:`~napkin.errors.NapkinError`, 400 for a request that is not a JSON object.

Simulations and plans run as background jobs (a thread each): ``POST`` answers
``{"job": id}`` and ``GET /api/jobs/{id}`` reports ``status`` (running, done, error), the
progress the API's callback gave, and the result or the error line when finished.

Pages: ``/model`` (model × GPU), ``/scenario`` (the serving simulator), ``/plan`` (the
planner), ``/trajectory`` (agent trajectories); scripts and styles under ``/static/``, Plotly's
bundle from the installed ``plotly`` package at ``/vendor/plotly.min.js`` (no CDN), gzipped once
per process for clients that accept it; every other answer over 1 kB is gzipped on the fly.
"""

from __future__ import annotations

import atexit
import gzip
import html
import logging
import math
import re
import shutil
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from fastapi import Body, FastAPI, File, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware

from napkin.api import agents, catalog, inference, planning, serving, training
from napkin.api.result import Result
from napkin.api.text import parse_ints, parse_loads
from napkin.errors import NapkinError
from napkin.specs.yaml_text import load_yaml
from napkin.web.paths import PathGuard

log = logging.getLogger("napkin.web")

PAGES = {"model": "model.html", "scenario": "scenario.html", "sweep": "sweep.html",
         "plan": "plan.html", "train": "train.html", "trajectory": "trajectory.html"}
"""Path → static HTML file of the pages (``/`` is the index)."""
NAV = {"model": "model × GPU", "scenario": "scenario runner", "sweep": "load sweep",
       "plan": "planner", "train": "training", "trajectory": "trajectory viewer"}
"""The header's links, in order."""
DOCS = {"model": "inference", "scenario": "serving", "sweep": "serving", "plan": "planning",
        "train": "training", "trajectory": "agents"}
"""Each page's documentation page (``/docs/<page>/``, the built site's URL of docs/<page>.md)."""


def page_html(static: Path, file: str, active: str | None) -> str:
    """A whole page from its fragment (a ``<title>`` line, then the ``<main>``): the shared
    head (style sheet; Plotly, ``common.js`` and the page's own ``<stem>.js`` when it has one)
    and the shared header (brand and the four links, ``active`` marked)."""
    title, main = (static / file).read_text(encoding="utf-8").split("\n", 1)
    script = Path(file).with_suffix(".js").name
    scripts = ("" if not (static / script).exists() else
               '<script src="/vendor/plotly.min.js"></script>\n'
               '<script src="/static/common.js"></script>\n'
               f'<script src="/static/{script}" defer></script>\n')
    links = []
    for route, label in NAV.items():
        mark = ' class="active"' if route == active else ""
        links.append(f'\n    <a href="/{route}"{mark}>{label}</a>')
    if active in DOCS:
        links.append(f'\n    <a href="/docs/{DOCS[active]}/" class="docs" '
                     f'data-docs="{DOCS[active]}">docs</a>')
    header = ('<header>\n  <span class="brand">napkin</span>\n  <nav>' + "".join(links)
              + "\n  </nav>\n</header>")
    return ('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'{title}\n<link rel="icon" href="data:,">\n'
            f'<link rel="stylesheet" href="/static/style.css">\n{scripts}</head>\n<body>\n'
            f'{header}\n{main}</body>\n</html>\n')


MAX_POINTS = 4000
"""Most points of one time series or CDF sent to a page (evenly thinned beyond)."""
MAX_UPLOAD_BYTES = 512 * 2**20
KEEP_JOBS = 16
"""Finished jobs kept for their results (the oldest are dropped first)."""
JOB_BUDGET_S = 600.0
"""Wall-clock seconds a simulation, sweep or plan may run before it is stopped."""
JOB_IDLE_S = 120.0
"""A background job nobody has polled for this long is stopped (its client went away)."""
MAX_REQUEST_BYTES = 32 * 2**20
"""Largest request body but an upload's (YAML and JSON inputs are kilobytes)."""


def static_dir() -> Path:
    """The folder of the pages, scripts and styles (shipped in the package)."""
    return Path(str(resources.files("napkin.web").joinpath("static")))


def plotly_bundle() -> Path:
    """``plotly.min.js`` of the installed ``plotly`` package (its package data)."""
    try:
        path = Path(str(resources.files("plotly").joinpath("package_data", "plotly.min.js")))
    except ModuleNotFoundError:
        raise NapkinError("web: needs plotly; pip install 'napkin[web]'") from None
    if not path.is_file():
        raise NapkinError(f"web: plotly's bundle is missing ({path}); reinstall plotly")
    return path


@cache
def gzipped(path: Path) -> bytes:
    """A static file gzip-compressed once per process (Plotly's 4.8 MB bundle: about 1.4 MB)."""
    return gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)


def presets_dir() -> Path:
    """The shipped scenario, workload, plan and trajectory files (``examples/``)."""
    return Path(str(resources.files("napkin.catalog").joinpath("scenarios")))


# ---------------------------------------------------------------------------------------------
# form fields → API keyword arguments


class Form:
    """Form fields (a query string or a JSON body) as API arguments; a value that does not parse
    is the CLI's line for that option (``Invalid value for '--context': …``)."""

    def __init__(self, values: Mapping[str, Any], guard: PathGuard | None = None) -> None:
        self.values = values
        self.guard = guard

    def raw(self, key: str) -> Any:
        value = self.values.get(key)
        return None if value is None or (isinstance(value, str) and not value.strip()) else value

    def text(self, key: str, default: str | None = None) -> str | None:
        """The field's text; a file it names resolved by the server's :class:`PathGuard`."""
        value = self.raw(key)
        if value is None:
            return default
        text = str(value).strip()
        return self.guard.value(key, text) if self.guard is not None else text

    def required(self, key: str, metavar: str) -> str:
        value = self.text(key)
        if value is None:
            raise NapkinError(f"Missing argument '{metavar}'.")
        return value

    @staticmethod
    def _flag(key: str) -> str:
        return "--" + key.replace("_", "-")

    def int(self, key: str, default: int | None = None) -> int | None:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        try:
            return int(str(value).strip())
        except ValueError:
            raise NapkinError(f"Invalid value for '{self._flag(key)}': Input should be a valid "
                              "integer, unable to parse string as an integer") from None

    def float(self, key: str, default: float | None = None) -> float | None:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            value = str(value)
        try:
            number = float(value if isinstance(value, int | float) else str(value).strip())
        except ValueError as e:
            raise NapkinError(f"Invalid value for '{self._flag(key)}': {e}") from None
        if not math.isfinite(number):
            raise NapkinError(f"Invalid value for '{self._flag(key)}': must be a finite number, "
                              f"got {str(value).strip()!r}")
        return number

    def bool(self, key: str) -> bool:
        value = self.raw(key)
        if isinstance(value, bool):
            return value
        return value is not None and str(value).strip().lower() in ("1", "true", "yes", "on")

    def ints(self, key: str, default: str) -> list[int]:
        """``"1,8,16"`` → ``[1, 8, 16]`` (the CLI's comma-separated integers)."""
        value = self.raw(key)
        text = default if value is None else (
            ",".join(map(str, value)) if isinstance(value, list) else str(value))
        return parse_ints(text, key)

    def lines(self, key: str) -> list[str]:
        """A list, or text with one item per line (blank lines and ``#`` comments skipped)."""
        value = self.values.get(key)
        if value is None:
            return []
        items = value if isinstance(value, list) else str(value).splitlines()
        out = [s for s in (str(i).strip() for i in items) if s and not s.startswith("#")]
        return self.guard.overrides(out) if self.guard is not None and key == "overrides" \
            else out


def parse_yaml(text: Any, what: str, required: bool = True) -> dict[str, Any] | None:
    """A YAML (or JSON) mapping from a text box or an uploaded file's text; the errors read as
    the CLI's for a file (``scenario: not valid YAML (…)``)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        if required:
            raise NapkinError(f"{what}: give the {what} (YAML)")
        return None
    if isinstance(text, dict):
        return text
    try:
        data = load_yaml(str(text), what)
    except yaml.YAMLError as e:
        raise NapkinError(f"{what}: not valid YAML ({str(e).splitlines()[0]})") from None
    except RecursionError:
        raise NapkinError(f"{what}: nested too deeply to read") from None
    if not isinstance(data, dict):
        raise NapkinError(f"{what}: a {what} must be a YAML mapping")
    return data


# ---------------------------------------------------------------------------------------------
# API results → JSON


def result_json(result: Result, **extra: Any) -> dict[str, Any]:
    """The result as the pages read it: title, the JSON payload, the printed tables."""
    tables = [{"title": s.title, "columns": list(s.columns), "rows": [list(r) for r in s.rows],
               "notes": list(s.notes)} for s in result.document.sections]
    return {"title": result.title, "data": result.data, "tables": tables,
            "timing": result.document.timing, **extra}


def _thin(n: int, most: int = MAX_POINTS) -> Any:
    """Indices of at most ``most`` evenly spread points of ``n`` (first and last kept)."""
    import numpy as np

    if n <= most:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, most).round().astype(int))


def _finite(values: Any) -> list[float]:
    import numpy as np

    v = np.asarray(values, dtype=float)
    return np.where(np.isfinite(v), v, 0.0).tolist()


def _cdf(values: Any) -> dict[str, list[float]]:
    """The empirical CDF of ``values`` (sorted values, share of values ≤ each)."""
    import numpy as np

    v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    if not len(v):
        return {"x": [], "y": []}
    idx = _thin(len(v))
    return {"x": v[idx].tolist(), "y": ((idx + 1) / len(v)).tolist()}


def run_series(runs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Per simulated scenario: each engine's waiting and running requests and KV blocks in use
    over time, and the CDFs of TTFT, TPOT and end-to-end latency (the figures of ``napkin serve
    simulate --plot``), thinned to at most :data:`MAX_POINTS` points each."""
    import numpy as np

    from napkin.report.export import request_columns

    out = []
    for name, run in runs:
        engines = []
        for e in run.engines:
            idx = _thin(len(e.series_t))
            engines.append({
                "name": e.name, "kv_blocks": int(e.spec.num_blocks),
                "t_s": _finite(np.asarray(e.series_t, dtype=float)[idx]),
                "waiting": np.asarray(e.series_waiting, dtype=int)[idx].tolist(),
                "running": np.asarray(e.series_running, dtype=int)[idx].tolist(),
                "kv_blocks_used": np.asarray(e.series_blocks, dtype=int)[idx].tolist()})
        cols = request_columns(run)
        multi = np.asarray(cols["output_tokens"]) > 1
        out.append({"name": name, "engines": engines,
                    "cdf": {"ttft_s": _cdf(cols["ttft_s"]),
                            "tpot_s": _cdf(np.asarray(cols["tpot_s"])[multi]),
                            "e2e_s": _cdf(cols["e2e_s"])}})
    return out


# ---------------------------------------------------------------------------------------------
# background jobs


class JobProgress(dict):
    """A job's progress, which the API's callbacks update as the run goes; each update checks
    the job's budget and stops the run (a :class:`NapkinError` out of the callback) once it
    has run ``budget_s`` or nobody has polled it for ``idle_s``."""

    def __init__(self, job: dict[str, Any], budget_s: float, idle_s: float | None) -> None:
        super().__init__()
        self.job, self.budget_s, self.idle_s = job, budget_s, idle_s

    def check(self) -> None:
        now = time.time()
        if now - self.job["started"] > self.budget_s:
            raise NapkinError(f"time: the run passed this server's budget of "
                              f"{self.budget_s:g} s and was stopped")
        if self.idle_s is not None and now - self.job["seen"] > self.idle_s:
            raise NapkinError(f"client: nobody asked for this job for {self.idle_s:g} s; it "
                              "was stopped")

    def __setitem__(self, key: Any, value: Any) -> None:
        self.check()
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.check()
        super().update(*args, **kwargs)


class Jobs:
    """Long runs in threads: a dict of jobs with their progress and outcome; each stopped at
    its budget (``budget_s`` of wall clock; ``idle_s`` without a poll)."""

    def __init__(self, keep: int = KEEP_JOBS, budget_s: float = JOB_BUDGET_S,
                 idle_s: float = JOB_IDLE_S) -> None:
        self.keep = keep
        self.budget_s, self.idle_s = budget_s, idle_s
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def progress(self, job: dict[str, Any] | None = None) -> JobProgress:
        """A fresh progress for ``job`` (None: a run answered at once, held to the budget
        alone)."""
        now = time.time()
        own = job if job is not None else {"started": now, "seen": now}
        return JobProgress(own, self.budget_s, self.idle_s if job is not None else None)

    def start(self, kind: str, work: Callable[[dict[str, Any]], dict[str, Any]]) -> str:
        """Run ``work(progress)`` in a thread; ``progress`` is a dict it updates."""
        job_id = uuid.uuid4().hex[:12]
        now = time.time()
        job: dict[str, Any] = {"id": job_id, "kind": kind, "status": "running",
                               "result": None, "error": None, "started": now, "seen": now,
                               "finished": None}
        job["progress"] = self.progress(job)
        with self._lock:
            self._jobs[job_id] = job
            self._trim()
        threading.Thread(target=self._run, args=(job, work), daemon=True,
                         name=f"napkin-web-{kind}-{job_id}").start()
        return job_id

    def _run(self, job: dict[str, Any], work: Callable[[dict[str, Any]], dict[str, Any]]
             ) -> None:
        try:
            result = work(job["progress"])
            job.update(result=result, status="done")
        except NapkinError as e:
            job.update(error=str(e), status="error")
        except Exception as e:  # a bug, not bad input: say so, log the traceback
            log.error("job %s failed:\n%s", job["id"], traceback.format_exc())
            job.update(error=f"internal error: {type(e).__name__}: {e}", status="error")
        finally:
            job["finished"] = time.time()

    def _trim(self) -> None:
        done = [j for j in self._jobs.values() if j["status"] != "running"]
        for j in sorted(done, key=lambda j: j["started"])[:max(0, len(done) - self.keep)]:
            del self._jobs[j["id"]]

    def get(self, job_id: str) -> dict[str, Any]:
        job = self._jobs.get(job_id)
        if job is None:
            raise StarletteHTTPException(404, f"job: no such job {job_id!r}")
        job["seen"] = time.time()
        now = job["finished"] or time.time()
        return {"id": job["id"], "kind": job["kind"], "status": job["status"],
                "progress": dict(job["progress"]), "elapsed_s": now - job["started"],
                "result": job["result"], "error": job["error"]}


def _run_or_start(jobs: Jobs, kind: str, wait: bool,
                  work: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """``wait``: run now and answer the result; else start a job and answer its id (202)."""
    if wait:
        return work(jobs.progress())
    return JSONResponse({"job": jobs.start(kind, work)}, status_code=202)


# ---------------------------------------------------------------------------------------------
# presets


def _preset_kind(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    if "steps" in data:
        return "trajectory"
    if "search" in data:
        return "plan"
    if "arrivals" in data:
        return "workload"
    if "workload" in data:
        return "scenario"
    return None


def list_presets() -> dict[str, list[str]]:
    """Shipped files by kind: scenario, plan, trajectory, workload."""
    out: dict[str, list[str]] = {"scenario": [], "plan": [], "trajectory": [], "workload": []}
    for path in sorted(presets_dir().glob("*.yaml")):
        kind = _preset_kind(yaml.safe_load(path.read_text()))
        if kind is not None:
            out[kind].append(path.name)
    return out


def read_preset(name: str) -> dict[str, Any]:
    """A shipped file's text; a scenario's workload file's text with it when it names one."""
    names = {n for names in list_presets().values() for n in names}
    if name not in names:
        raise NapkinError(f"preset: no shipped file {name!r}; allowed: {', '.join(sorted(names))}")
    path = presets_dir() / name
    text = path.read_text()
    data = yaml.safe_load(text)
    out: dict[str, Any] = {"name": name, "kind": _preset_kind(data), "text": text,
                           "workload": None}
    ref = data.get("workload")
    if isinstance(ref, str) and (path.parent / ref).is_file():
        out["workload"] = {"name": ref, "text": (path.parent / ref).read_text()}
    return out


# ---------------------------------------------------------------------------------------------
# the app


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _request_error(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "request: not understood"
    e = errors[0]
    where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
    return f"request: {where + ': ' if where else ''}{e.get('msg', 'invalid')}"


class BodyLimit:
    """Refuse a request body over ``limit`` bytes (by its ``Content-Length``) with 413 and the
    one-line JSON error, before the app reads it; uploads stream under their own cap."""

    def __init__(self, app: Any, limit: int = MAX_REQUEST_BYTES,
                 exempt: tuple[str, ...] = ("/api/upload",)) -> None:
        self.app, self.limit, self.exempt = app, limit, exempt

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] not in self.exempt:
            length = dict(scope.get("headers") or ()).get(b"content-length", b"0")
            size = int(length) if length.isdigit() else 0
            if size > self.limit:
                response = _error(413, f"request: {size:,} bytes; at most {self.limit:,} are "
                                       "read (upload large files through /api/upload)")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def docs_site(given: str | Path | None = None) -> Path | None:
    """The built documentation site (``mkdocs build`` writes ``site/`` in the repository):
    ``given``, else the checkout's ``site/`` when napkin runs from one; None: not built."""
    if given is not None:
        path = Path(given)
        if not (path / "index.html").is_file():
            raise NapkinError(f"docs: {path} holds no built site (index.html); run "
                              "`mkdocs build` in the repository")
        return path
    site = Path(__file__).resolve().parents[3] / "site"
    return site if (site / "index.html").is_file() else None


def _docs_missing(page: str) -> HTMLResponse:
    name = page.strip("/").split("/")[0] or "index"
    e = html.escape
    return HTMLResponse(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>napkin docs · {e(name)}</title>"
        "<link rel=\"stylesheet\" href=\"/static/style.css\"></head><body><main>"
        f"<h1>docs/{e(name)}.md</h1><p>The documentation site is not built on this machine. "
        f"The page is <code>docs/{e(name)}.md</code> in napkin's repository; "
        "<code>pip install '.[docs]' &amp;&amp; mkdocs build</code> there writes "
        "<code>site/</code>, which <code>napkin web</code> serves at <code>/docs/</code> "
        "(or <code>napkin web --docs DIR</code>).</p></main></body></html>")


def create_app(upload_dir: str | Path | None = None,
               docs_dir: str | Path | None = None,
               data_dir: str | Path | None = None, job_budget_s: float = JOB_BUDGET_S,
               job_idle_s: float = JOB_IDLE_S) -> FastAPI:
    """The ``napkin web`` app. ``upload_dir``: where uploaded files are kept (default: a new
    temporary folder on the first upload); ``docs_dir``: the built documentation site served
    at ``/docs/`` (default: the checkout's ``site/`` if built, else a page saying where each
    page's source is); ``data_dir``: the folder whose files requests may name besides their
    uploads and the shipped examples (:mod:`napkin.web.paths`)."""
    plotly_js = plotly_bundle()
    static = static_dir()
    app = FastAPI(title="napkin", summary="Napkin math for LLM systems, in a browser",
                  docs_url=None, redoc_url=None,  # their pages load scripts from a CDN
                  openapi_url="/api/openapi.json")
    app.add_middleware(GZipMiddleware, minimum_size=1000, compresslevel=6)
    app.add_middleware(BodyLimit)
    jobs = Jobs(budget_s=job_budget_s, idle_s=job_idle_s)
    app.state.jobs = jobs
    uploads: dict[str, Path | None] = {"dir": Path(upload_dir) if upload_dir else None}
    if data_dir is not None and not Path(data_dir).is_dir():
        raise NapkinError(f"data: {str(data_dir)!r} is not a folder")
    data = Path(data_dir) if data_dir is not None else None
    guard = PathGuard(lambda: [p for p in (uploads["dir"], data, presets_dir()) if p])

    def parse(text: Any, what: str, required: bool = True) -> dict[str, Any] | None:
        """:func:`parse_yaml`, with the files it names resolved by the guard."""
        found = parse_yaml(text, what, required)
        return None if found is None else guard.walk(found)

    @app.exception_handler(NapkinError)
    async def _napkin_error(_request: Request, exc: NapkinError) -> JSONResponse:
        return _error(422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, _request_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    # --- pages and assets

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(page_html(static, "index.html", None))

    for route, page in PAGES.items():
        def serve(page: str = page, route: str = route) -> HTMLResponse:
            return HTMLResponse(page_html(static, page, route))

        app.add_api_route(f"/{route}", serve, methods=["GET"], include_in_schema=False,
                          name=f"page_{route}")
        app.add_api_route(f"/{route}/", lambda route=route: RedirectResponse(f"/{route}"),
                          methods=["GET"], include_in_schema=False, name=f"slash_{route}")

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    def plotly(request: Request) -> Response:
        cache = {"Cache-Control": "max-age=86400", "Vary": "Accept-Encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            return Response(gzipped(plotly_js), media_type="text/javascript",
                            headers={**cache, "Content-Encoding": "gzip"})
        return FileResponse(plotly_js, media_type="text/javascript", headers=cache)

    app.mount("/static", StaticFiles(directory=static), name="static")
    site = docs_site(docs_dir)
    if site is not None:
        app.mount("/docs", StaticFiles(directory=site, html=True), name="docs")
    else:
        @app.get("/docs/{page:path}", include_in_schema=False)
        def docs_missing(page: str) -> HTMLResponse:
            return _docs_missing(page)

    # --- catalog and model × GPU

    @app.get("/api/models")
    def models() -> dict[str, Any]:
        """``napkin models``."""
        return result_json(catalog.list_models())

    @app.get("/api/gpus")
    def gpus() -> dict[str, Any]:
        """``napkin gpus``."""
        return result_json(catalog.list_gpus())

    @app.get("/api/model")
    def model(request: Request) -> dict[str, Any]:
        """``napkin model MODEL [--weights] [--kv-dtype] [--unquantized] [--read-embedding]``."""
        f = Form(request.query_params, guard)
        return result_json(catalog.describe_model(
            f.required("model", "MODEL"), weights=f.text("weights", "bf16"),
            kv_dtype=f.text("kv_dtype", "bf16"), read_embedding=f.bool("read_embedding"),
            unquantized=f.text("unquantized") or None))

    def _gpu_args(f: Form) -> dict[str, Any]:
        return {"gpu": f.text("gpu"), "gpu_mem_gb": f.float("gpu_mem_gb"),
                "gpu_bw_gbs": f.float("gpu_bw_gbs"), "gpu_tflops": f.float("gpu_tflops"),
                "weights": f.text("weights", "bf16"), "kv_dtype": f.text("kv_dtype", "bf16"),
                "unquantized": f.text("unquantized") or None,
                "reserve_gb": f.float("reserve_gb", 0.0), "context": f.int("context", 4096)}

    @app.get("/api/decode")
    def decode(request: Request) -> dict[str, Any]:
        """``napkin decode MODEL --gpu --batch 1,8,64 --context …``."""
        f = Form(request.query_params, guard)
        efficiency = {k: v for k, v in (("mfu", f.float("mfu")), ("mbu", f.float("mbu")))
                      if v is not None}  # not given: the API's defaults
        return result_json(inference.decode_table(
            f.required("model", "MODEL"), batch=f.ints("batch", "1"), **_gpu_args(f),
            read_embedding=f.bool("read_embedding"), overhead_ms=f.float("overhead_ms", 0.0),
            **efficiency))

    @app.get("/api/capacity")
    def capacity(request: Request) -> dict[str, Any]:
        """``napkin capacity MODEL --gpu --count --context [--avg-context] …``."""
        f = Form(request.query_params, guard)
        return result_json(inference.capacity(
            f.required("model", "MODEL"), count=f.int("count", 1),
            avg_context=f.int("avg_context"), **_gpu_args(f)))

    # --- presets and uploads

    @app.get("/api/presets")
    def presets() -> dict[str, list[str]]:
        """The shipped example files by kind."""
        return list_presets()

    @app.get("/api/presets/{name}")
    def preset(name: str) -> dict[str, Any]:
        """A shipped file's text (and its workload file's, for a scenario naming one)."""
        return read_preset(name)

    @app.post("/api/upload")
    def upload(file: UploadFile = File(...)) -> dict[str, Any]:  # noqa: B008
        """Keep an uploaded file (a trace, a workload) on the server; answers its path, for
        a workload's ``path`` or a scenario's ``workload``."""
        if uploads["dir"] is None:  # a folder of our own, removed when the server exits
            uploads["dir"] = Path(tempfile.mkdtemp(prefix="napkin-web-"))
            atexit.register(shutil.rmtree, uploads["dir"], ignore_errors=True)
        folder = uploads["dir"]
        assert folder is not None
        folder.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(file.filename or "upload").name)
        name = name.strip(".-") or "upload"
        path = folder / name
        size = 0
        with path.open("wb") as out:
            while chunk := file.file.read(1 << 20):
                size += len(chunk)
                if size > MAX_UPLOAD_BYTES:
                    out.close()
                    path.unlink()
                    raise NapkinError(f"upload: {name} is larger than "
                                      f"{MAX_UPLOAD_BYTES // 2**20} MiB")
                out.write(chunk)
        return {"name": name, "path": str(path), "bytes": size}

    # --- serving simulator

    @app.post("/api/simulate")
    def simulate(payload: dict[str, Any] = Body(...)) -> Any:  # noqa: B008
        """``napkin serve simulate``: ``scenario`` (YAML text; ``scenarios`` for several),
        ``workload`` (YAML text replacing the scenario's workload), ``overrides`` (the CLI's
        ``--set`` items, one per line), ``mode``, ``seed``; ``wait``: answer the result now
        instead of a job id."""
        f = Form(payload, guard)
        texts = payload.get("scenarios") or [payload.get("scenario")]
        if not isinstance(texts, list):
            texts = [texts]
        scenarios = [parse(t, "scenario") for t in texts]
        workload = parse(payload.get("workload"), "workload", required=False)
        if workload is not None:
            for s in scenarios:
                assert s is not None
                s["workload"] = workload
        kwargs = {"overrides": f.lines("overrides"), "mode": f.text("mode"),
                  "seed": f.int("seed")}

        def work(progress: dict[str, Any]) -> dict[str, Any]:
            count = {"i": 0}

            def on_scenario(name: str, requests: int | None) -> None:
                count["i"] += 1
                progress.update(scenario=name, index=count["i"], scenarios=len(scenarios),
                                requests=requests, finished=0, t_s=0.0)

            def on_progress(t_s: float, finished: int) -> None:
                progress["t_s"], progress["finished"] = t_s, finished

            result = serving.simulate(scenarios, progress=on_progress, on_scenario=on_scenario,
                                      **kwargs)
            return result_json(result, series=run_series(result.value["runs"]))

        return _run_or_start(jobs, "simulate", f.bool("wait"), work)

    # --- load sweep

    @app.post("/api/sweep")
    def sweep(payload: dict[str, Any] = Body(...)) -> Any:  # noqa: B008
        """``napkin serve sweep``: ``scenario`` (YAML text), ``workload`` (YAML text replacing
        its workload), ``overrides`` (``--set`` items, one per line), ``rates`` (``auto`` or
        comma-separated loads), ``seeds``; ``wait``: answer the result now."""
        f = Form(payload, guard)
        scenario = parse(payload.get("scenario"), "scenario")
        workload = parse(payload.get("workload"), "workload", required=False)
        assert scenario is not None
        if workload is not None:
            scenario["workload"] = workload
        kwargs = {"rates": parse_loads(f.text("rates") or "auto"), "seeds": f.int("seeds", 1),
                  "overrides": f.lines("overrides")}

        def work(progress: dict[str, Any]) -> dict[str, Any]:
            return result_json(serving.sweep(scenario, **kwargs))

        return _run_or_start(jobs, "sweep", f.bool("wait"), work)

    # --- training

    @app.get("/api/train")
    def train(request: Request) -> dict[str, Any]:
        """``napkin train MODEL …``: the form's fields as the CLI's options (``tokens`` for a
        whole run)."""
        f = Form(request.query_params, guard)
        return result_json(training.train(
            f.required("model", "MODEL"), seq=f.int("seq", 4096),
            micro_batch=f.int("micro_batch", 1), accumulation=f.int("accumulation", 1),
            devices=f.int("devices", 1), gpu=f.text("gpu", "h100-sxm"), zero=f.int("zero", 0),
            tp=f.int("tp", 1), pipeline=f.int("pipeline", 1), cp=f.int("cp", 1),
            ep=f.int("ep", 1), precision=f.text("precision", "bf16") or "bf16",
            recompute=f.text("recompute", "none") or "none", compiled=f.bool("compile"),
            mfu=f.float("mfu"), tokens=f.float("tokens"),
            usd_per_gpu_hour=f.float("usd_per_gpu_hour")))

    # --- planner

    @app.post("/api/plan")
    def plan(payload: dict[str, Any] = Body(...)) -> Any:  # noqa: B008
        """``napkin plan``: ``plan`` (YAML text), ``jobs`` (worker processes, 0: one per
        core), ``top``; ``wait``: answer the result now instead of a job id."""
        f = Form(payload, guard)
        spec = parse(payload.get("plan"), "plan")
        jobs_n, top = f.int("jobs", 0), f.int("top", 15)

        def work(progress: dict[str, Any]) -> dict[str, Any]:
            def on_progress(done: int, total: int) -> None:
                progress["done"], progress["total"] = done, total

            assert spec is not None
            return result_json(planning.plan(spec, jobs=jobs_n, top=top, progress=on_progress))

        return _run_or_start(jobs, "plan", f.bool("wait"), work)

    # --- trajectories

    @app.post("/api/agent")
    def agent(payload: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        """``napkin agent``: ``trajectory`` (YAML text; ``trajectories`` for a logged set),
        ``speedup`` (STEP=FACTOR, one per line), ``model``, ``gpu``, ``weights``,
        ``kv_dtype``, ``mfu``, ``mbu``."""
        f = Form(payload, guard)
        texts = payload.get("trajectories") or [payload.get("trajectory")]
        if not isinstance(texts, list):
            texts = [texts]
        refs = [parse(t, "trajectory") for t in texts]
        result = agents.analyze_trajectory(
            refs[0] if len(refs) == 1 else refs, speedup=f.lines("speedup"),
            model=f.text("model"), gpu=f.text("gpu"), weights=f.text("weights"),
            kv_dtype=f.text("kv_dtype"), mfu=f.float("mfu"), mbu=f.float("mbu"))
        return result_json(result)

    # --- jobs

    @app.get("/api/jobs/{job_id}")
    def job(job_id: str) -> dict[str, Any]:
        """A background job: status (running, done, error), progress, result or error."""
        return jobs.get(job_id)

    return app
