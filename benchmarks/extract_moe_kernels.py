"""aiconfigurator's MoE kernel tables as napkin's kernel CSV
(``catalog/measurements/aiconfigurator_<gpu>_moe_kernels.csv``, read by
:func:`napkin.calibration.moe_kernels.read_moe_kernels`).

aiconfigurator (Apache-2.0) times one MoE layer's routed experts alone on each GPU and engine
(``aic-core/src/aiconfigurator_core/systems/data/<system>/moe/<engine>/<version>/
moe_perf.parquet``: tokens routed top-k over ``moe_tp_size × moe_ep_size`` GPUs, latency in
ms). The rows kept are the shipped table's rules: ``balanced`` routing; the shapes (hidden,
expert intermediate, experts, top-k) of the catalog's MoE models (:data:`MODELS`, named in
``model``); BF16, FP8 per-tensor and 128×128 block-scaled, W4A16 MXFP4, and on a GPU with an
FP4 rate NVFP4; 1–16,384 tokens in powers of two; MoE TP × EP ≤ 16. Every timing is kept,
in the table's order (a point timed twice, or by two kernels — TensorRT-LLM's CUTLASS and
minimum-latency paths on Blackwell — is two rows); latencies to six significant digits.

The H100 table (``aiconfigurator_h100_moe_kernels.csv``: TensorRT-LLM 1.2.0rc5, vLLM 0.19.0,
SGLang 0.5.9, aiconfigurator@095f58a) is rebuilt byte for byte by::

    python benchmarks/extract_moe_kernels.py REPO --system h100_sxm --gpu h100-sxm \\
        --out /tmp/h100.csv

where REPO is a checkout (or ``git`` directory) of ai-dynamo/aiconfigurator; ``--system
b200_sxm --gpu b200`` writes the B200 one.

Usage: python benchmarks/extract_moe_kernels.py REPO [--system S] [--gpu G] [--out CSV]
       [--versions trtllm=1.2.0rc5 vllm=0.19.0 sglang=0.5.9]
"""

import argparse
import csv
import io
import subprocess
from pathlib import Path

import pyarrow.parquet as pq

from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError

MODELS = ("deepseek-v3", "glm-5", "gpt-oss-120b", "gpt-oss-20b", "kimi-k2.5", "minimax-m2.5",
          "mixtral-8x7b", "qwen3-235b-a22b", "qwen3-30b-a3b")
"""The catalog MoE models whose expert shapes are kept."""
VERSIONS = {"trtllm": "1.2.0rc5", "vllm": "0.19.0", "sglang": "0.5.9"}
FORMATS = ("bfloat16", "fp8", "fp8_block", "w4a16_mxfp4")
FP4_FORMATS = ("nvfp4",)
"""Kept on a GPU with an FP4 tensor rate only."""
TOKENS = tuple(2 ** i for i in range(15))
MOST_GPUS = 16
COLUMNS = ("engine", "version", "kernel_source", "moe_dtype", "model", "num_tokens",
           "moe_tp_size", "moe_ep_size", "latency_ms")
PARQUET = "aic-core/src/aiconfigurator_core/systems/data/{system}/moe/{engine}/{version}/" \
          "moe_perf.parquet"


def shapes() -> dict[tuple[int, int, int, int], str]:
    """(hidden, expert intermediate, experts, top-k) → catalog model."""
    out = {}
    for name in MODELS:
        m = load_model(name)
        ex = next(g.block.experts for g in m.layer_groups if g.block.experts)
        inter = next(lin.out_features for lin in ex.linears if lin.stage == 5)
        out[(m.hidden_size, inter, ex.num_experts, ex.num_active)] = name
    return out


def read_repo_file(repo: Path, path: str) -> bytes:
    """A file of the repository: from its work tree, else from its git directory's HEAD; one
    error naming the file where it has neither."""
    if (repo / path).is_file():
        return (repo / path).read_bytes()
    done = subprocess.run(["git", f"--git-dir={repo}", "show", f"HEAD:{path}"],
                          capture_output=True)
    if done.returncode:
        raise NapkinError(f"repo: {repo} holds no {path}")
    return done.stdout


def rows(repo: Path, system: str, gpu: str, versions: dict[str, str]) -> list[dict]:
    """The kept rows of every engine's table (module docstring)."""
    named, fp4 = shapes(), "fp4" in load_accelerator(gpu).dense_flops_per_s
    formats = FORMATS + (FP4_FORMATS if fp4 else ())
    out = []
    for engine, version in versions.items():
        data = read_repo_file(repo, PARQUET.format(system=system, engine=engine, version=version))
        for r in pq.read_table(io.BytesIO(data)).to_pylist():
            model = named.get((r["hidden_size"], r["inter_size"], r["num_experts"], r["topk"]))
            if (model is None or r["distribution"] != "balanced" or r["moe_dtype"] not in formats
                    or r["num_tokens"] not in TOKENS
                    or r["moe_tp_size"] * r["moe_ep_size"] > MOST_GPUS):
                continue
            out.append({"engine": engine, "version": version,
                        "kernel_source": r["kernel_source"], "moe_dtype": r["moe_dtype"],
                        "model": model, "num_tokens": r["num_tokens"],
                        "moe_tp_size": r["moe_tp_size"], "moe_ep_size": r["moe_ep_size"],
                        "latency_ms": f"{r['latency']:.6g}"})
    return out


def add_source_arguments(ap: argparse.ArgumentParser, versions: dict[str, str]) -> None:
    """The arguments of a script that reads aiconfigurator's tables: the repository, its system
    folder, napkin's catalog id of that GPU and the engine versions (``ENGINE=VERSION``)."""
    ap.add_argument("repo", type=Path, help="ai-dynamo/aiconfigurator: a checkout or its git "
                                            "directory")
    ap.add_argument("--system", default="h100_sxm", help="aiconfigurator's system folder")
    ap.add_argument("--gpu", default="h100-sxm", help="napkin's catalog id of that GPU")
    ap.add_argument("--versions", nargs="*", default=[f"{k}={v}" for k, v in versions.items()],
                    metavar="ENGINE=VERSION")


def checked_sources(ap: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """:func:`add_source_arguments`' values checked (one usage line naming the argument each,
    and ``--out`` where the script has one: a file in a folder that exists), as engine →
    version."""
    if not args.repo.is_dir():
        ap.error(f"repo: {args.repo} is not a folder")
    if any(v.count("=") != 1 or not all(v.split("=")) for v in args.versions):
        ap.error("--versions: give ENGINE=VERSION pairs, e.g. trtllm=1.2.0rc5")
    try:
        load_accelerator(args.gpu)
    except NapkinError as e:
        ap.error(f"--gpu: {e}")
    out = getattr(args, "out", None)
    if out is not None and (out.is_dir() or not out.resolve().parent.is_dir()):
        ap.error(f"--out: {out} is a folder or in no folder that exists; give a file path")
    return dict(v.split("=", 1) for v in args.versions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_source_arguments(ap, VERSIONS)
    ap.add_argument("--out", type=Path, default=Path("moe_kernels.csv"))
    args = ap.parse_args()
    versions = checked_sources(ap, args)
    try:
        kept = rows(args.repo, args.system, args.gpu, versions)
    except NapkinError as e:
        ap.error(str(e))
    with args.out.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(kept)
    print(f"{len(kept)} rows → {args.out}")


if __name__ == "__main__":
    main()
