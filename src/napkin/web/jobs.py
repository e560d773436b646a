"""Background jobs of ``napkin web``: simulations, sweeps and plans run in a thread each,
report their progress, and stop at their budget of wall clock or when nobody polls them."""

import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from napkin.errors import NapkinError

log = logging.getLogger("napkin.web")

KEEP_JOBS = 16
"""Finished jobs kept for their results (the oldest are dropped first)."""
JOB_BUDGET_S = 600.0
"""Wall-clock seconds a simulation, sweep or plan may run before it is stopped."""
JOB_IDLE_S = 120.0
"""A background job nobody has polled for this long is stopped (its client went away)."""


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


def run_or_start(jobs: Jobs, kind: str, wait: bool,
                  work: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """``wait``: run now and answer the result; else start a job and answer its id (202)."""
    if wait:
        return work(jobs.progress())
    return JSONResponse({"job": jobs.start(kind, work)}, status_code=202)
