"""Engine releases and the execution generations they belong to.

A fitted profile describes the engine releases its measurements ran (``Domain.versions``); a
release of another generation runs its steps differently, and a query naming one is told so:

- TensorRT-LLM before 1.0 runs **compiled TensorRT engines** (``trtllm-build``; the v0.x
  ``perf-overview`` tables): a step, context requests included, is one engine launch, and the
  in-flight batcher runs in C++. From 1.0 the default is the **PyTorch backend**, which replays a
  batch as a CUDA graph only when it holds no context request
  (``ScheduledRequests.can_run_cuda_graph``), so a step with a prefill chunk launches every
  layer's kernels from the host — the profile's ``eager_layer`` floor, which compiled engines do
  not pay (:func:`eager_prefill`).
- vLLM before 0.8 defaults to the **V0 engine** (its scheduler, prefill-first unless chunked
  prefill is on); from 0.8.0 to the **V1 engine** (``VLLM_USE_V1``; V0 removed in 0.11): chunked
  prefill always, decodes first, piecewise CUDA graphs.
- SGLang's releases are one generation here.
"""

from collections.abc import Iterable

GENERATIONS: dict[str, tuple[tuple[tuple[int, ...], str], ...]] = {
    "trtllm": (((1, 0), "PyTorch backend"), ((0,), "compiled TensorRT engines")),
    "vllm": (((0, 8), "V1 engine"), ((0,), "V0 engine")),
}
"""Per backend, (first release, generation) from the newest down."""


def release(version: str) -> tuple[int, ...] | None:
    """The numeric release of a version string (``1.0.0rc3`` → (1, 0, 0), ``v0.17`` → (0, 17));
    None for an empty or non-numeric one (``nightly-…``)."""
    parts = []
    for piece in version.strip().lstrip("v").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) < len(piece):  # a suffix (rc3, post1) ends the release
            break
    return tuple(parts) or None


def version_at_least(version: str, floor: tuple[int, ...]) -> bool:
    """Whether a release string (``0.5.10.post1``) is ``floor`` or later; an empty or
    non-numeric one (``nightly-dev-…``) is not known to be (:func:`release`)."""
    parts = release(version) or ()
    return len(parts) >= len(floor) and parts[:len(floor)] >= floor


def generation(backend: str, version: str) -> str | None:
    """The execution generation of ``backend`` ``version`` (module docstring); None where the
    backend has one or the version does not parse."""
    r = release(version)
    if r is None or backend not in GENERATIONS:
        return None
    return next((name for first, name in GENERATIONS[backend] if r >= first), None)


def eager_prefill(backend: str, version: str) -> bool:
    """Whether a step carrying a prefill chunk launches its layers from the host (so a profile's
    ``eager_layer`` floor applies): every engine but TensorRT-LLM's compiled engines (before
    1.0); an unknown version is taken as current."""
    return generation(backend, version) != "compiled TensorRT engines"


def releases(versions: Iterable[str]) -> tuple[str, ...]:
    """The distinct version strings that name a release (:func:`release`), sorted."""
    return tuple(sorted({v for v in versions if release(v) is not None}))


def reserves_full_prompt(backend: str, version: str) -> bool:
    """Whether the engine admits a waiting request only when blocks for its whole sequence are
    free: vLLM from 0.19.0 (``scheduler_reserve_full_isl``, on by default, vllm-project/vllm
    #37307); an unknown version is taken as current. Other backends: their own policies."""
    r = release(version)
    return backend == "vllm" and (r is None or r >= (0, 19))
