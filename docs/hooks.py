"""MkDocs hooks: the file-format reference page is generated from the pydantic models at build
time (``napkin.report.formats``), so it cannot drift from the code; a ``reference/formats.md``
in ``docs/`` would be replaced. The figures the pages show (``figures/*.png``) are drawn at
build time by the commands their captions name (:data:`FIGURES`), so they too follow the
code."""

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

FORMATS_PAGE = "reference/formats.md"


def _figures() -> dict[str, Callable[[], object]]:
    """figures/<name>.png → the API call whose ``.plot`` draws it (the command in its caption)."""
    import napkin

    return {
        "chapter-3-1.png": lambda: napkin.simulate(["examples/chapter-3-1-uniform.yaml",
                                                    "examples/chapter-3-1-shifted.yaml"]),
        "backlog.png": lambda: napkin.fluid("examples/chapter-3-1-shifted.workload.yaml",
                                            gpu="rtx-pro-6000", count=2),
        "demand.png": lambda: napkin.demand("examples/chapter-3-1-shifted.workload.yaml"),
        "sweep.png": lambda: napkin.sweep("examples/chapter-3-1-uniform.yaml"),
        "pareto.png": lambda: napkin.plan("examples/plan-llama-70b-fp8.yaml", jobs=1),
        "timeline.png": lambda: napkin.analyze_trajectory("examples/agent-branches.yaml",
                                                          gpu="h100-sxm"),
        "playback.png": lambda: napkin.media_jitter(buffer_ms=[40, 60]),
        "vision-tokens.png": lambda: napkin.media_vision(images=[(640, 640), (1080, 1920)]),
        "cost-per-success.png": lambda: napkin.cost_success(cost=[1, 2], success=[0.5, 0.8]),
        "gpu-hours.png": lambda: napkin.gpu_hours(1022362, gpu="a100-80gb-sxm", devices=2048,
                                                  as_gpu=["h100-sxm"]),
        "decision.png": lambda: napkin.decision("qwen3-8b"),
        "ced.png": lambda: napkin.ced(prompt=8192),
        "life.png": lambda: napkin.lifecycle(target_loss=2.5, sizes=[1e9, 4e9], prompt=512,
                                             gen=128),
        "life-c4.png": lambda: napkin.lifecycle(target_loss=2.9, sizes=[1e8, 5e8], law="c4"),
        "allocation.png": lambda: napkin.scaling_optimum(flops=1e22, law="kaplan"),
        "train-memory.png": lambda: napkin.train("qwen3-8b", optimizer="adamw-fp32-grads",
                                                 gpu="h200", mfu=0.4),
        "rl-cycle.png": lambda: napkin.rl("qwen3-8b", generate=32, compare_generate=64),
    }


def _draw(root: Path) -> dict[str, bytes]:
    out = {}
    here = Path.cwd()
    os.chdir(root)  # the examples' paths are the repository's
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, call in _figures().items():
                call().plot(Path(tmp) / name)
            # a command may draw one figure per case (playback-40ms.png, …)
            out = {f.name: f.read_bytes() for f in sorted(Path(tmp).iterdir())}
    finally:
        os.chdir(here)
    return out


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from napkin.report.formats import formats_markdown

    existing = files.get_file_from_path(FORMATS_PAGE)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, FORMATS_PAGE, content=formats_markdown()))
    root = Path(config.config_file_path).parent
    for name, png in _draw(root).items():
        files.append(File.generated(config, f"figures/{name}", content=png))
    return files
