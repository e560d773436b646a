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

This module holds the app and its routes; what they use is by concern: :mod:`~napkin.web.forms`
(form fields → API arguments), :mod:`~napkin.web.results` (results → JSON),
:mod:`~napkin.web.jobs` (background jobs), :mod:`~napkin.web.pages` (the pages, static files and
docs site), :mod:`~napkin.web.presets` (the shipped examples) and :mod:`~napkin.web.paths`
(which files a request may name).
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

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
from napkin.api.text import parse_loads
from napkin.errors import NapkinError
from napkin.web.forms import Form, parse_yaml
from napkin.web.jobs import JOB_BUDGET_S, JOB_IDLE_S, Jobs, run_or_start
from napkin.web.pages import (
    PAGES,
    docs_missing_page,
    docs_site,
    gzipped,
    page_html,
    plotly_bundle,
    static_dir,
)
from napkin.web.paths import PathGuard
from napkin.web.presets import list_presets, presets_dir, read_preset
from napkin.web.results import result_json, run_series

MAX_UPLOAD_BYTES = 512 * 2**20
MAX_REQUEST_BYTES = 32 * 2**20
"""Largest request body but an upload's (YAML and JSON inputs are kilobytes)."""


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
            return docs_missing_page(page)

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

        return run_or_start(jobs, "simulate", f.bool("wait"), work)

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

        return run_or_start(jobs, "sweep", f.bool("wait"), work)

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

        return run_or_start(jobs, "plan", f.bool("wait"), work)

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
