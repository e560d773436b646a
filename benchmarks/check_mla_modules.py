"""What an MLA attention block costs the engines beyond a GQA one, on their own H100 timings.

napkin's fitted profiles charge every decoder layer one fixed time (``layer``, set on GQA
models) and time attention by its FLOPs and bytes, so an MLA layer — more kernels a layer:
the query and latent down-projections, two norms, the up-projections or, in decode, the
absorbed batched matmuls on each side of the latent attention, rotary on a split head — is
charged the fixed time of a GQA one. aiconfigurator (Apache-2.0) times the whole MLA block of
DeepSeek-V3 as one module on each GPU and engine under CUDA graphs
(``aic-core/src/aiconfigurator_core/systems/data/<system>/mla/<engine>/<version>/
mla_{generation,context}_module_perf.parquet``; ``num_heads`` the rank's heads), and the
pieces of a GQA block apart (``attention/.../{generation,context}_attention_perf.parquet``,
``gemm/.../gemm_perf.parquet``). This script prints, per engine, for DeepSeek-V3's block at
``--tp`` (its 128 heads over the ranks) and Llama-3.1-70B's GQA block at the same TP (the
attention kernel, the QKV and output projections' GEMMs; norms and rotary not timed apart),
all BF16:

- decode (each of ``--batch`` sequences at a 1,024-token context) and prefill (one prompt of
  each of ``--prompt`` tokens): the MLA module's time, the GQA block's, and the difference
  per layer and over DeepSeek-V3's MLA layers;
- the engine's profile ``layer`` coefficient (its fixed time per layer), for scale, and
  ``mla_layer`` set on the decode points the shipped tables hold (TP 2, 4, 8 × 1–16 sequences:
  :func:`napkin.calibration.mla_blocks.mla_layer_s`) with the MLA block's error held out by TP
  size (:func:`~napkin.calibration.mla_blocks.holdout`).

With ``--out`` it writes those points (``catalog/measurements/aiconfigurator_h100_mla_blocks.csv``
from ``--system h100_sxm --gpu h100-sxm``, ``aiconfigurator_b200_mla_blocks.csv`` from
``--system b200_sxm --gpu b200``; aiconfigurator@095f58a rebuilds both byte for byte). The H100
tables may be fitted on (``shared/validation/README.md``).

Usage: python benchmarks/check_mla_modules.py REPO [--system h100_sxm] [--gpu h100-sxm] [--tp 8]
       [--versions trtllm=1.3.0rc10 vllm=0.19.0] [--batch 1 4 16 64] [--prompt 128 1024 8192]
       [--out CSV]
"""

import argparse
import csv
import io
import math
from pathlib import Path

import pyarrow.parquet as pq

from arguments import whole_number
from extract_moe_kernels import read_repo_file
from napkin.calibration.mla_blocks import (
    CONTEXT,
    GQA_MODEL,
    MLA_MODEL,
    BlockRow,
    holdout,
    mla_layer_s,
)
from napkin.calibration.profile import load_profile
from napkin.calibration.terms import TERMS
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError

VERSIONS = {"trtllm": "1.3.0rc10", "vllm": "0.19.0"}
"""The engine versions with an MLA module table on H100 and B200 (SGLang has none: its MLA
kernels are timed apart)."""
SHIPPED_TP = (2, 4, 8)
SHIPPED_BATCH = (1, 2, 4, 8, 16)
"""The decode points ``--out`` writes (the shipped tables': where fixed time rules a step)."""
DATA = "aic-core/src/aiconfigurator_core/systems/data/{system}/{op}/{engine}/{version}/{file}"


def _table(repo: Path, system: str, op: str, engine: str, version: str,
           file: str) -> list[dict]:
    data = read_repo_file(repo, DATA.format(system=system, op=op, engine=engine,
                                            version=version, file=file))
    return pq.read_table(io.BytesIO(data)).to_pylist()


def _mean_s(rows: list[dict], **match: object) -> float:
    """Mean latency (s) of the rows matching every ``match``; one error where none does."""
    hits = [r["latency"] for r in rows if all(r.get(k) == v for k, v in match.items())]
    if not hits:
        raise NapkinError(f"no timing for {match}")
    return sum(hits) / len(hits) * 1e-3


def _nearest(rows: list[dict], key: str, value: float, **match: object) -> object:
    """The ``key`` of the rows matching ``match`` nearest ``value`` in log scale."""
    keys = {r[key] for r in rows if all(r.get(k) == v for k, v in match.items())}
    if not keys:
        raise NapkinError(f"no timing for {match}")
    return min(keys, key=lambda k: abs(math.log(k / value)))


def _gemm_s(rows: list[dict], m: int, n: int, k: int) -> float:
    """A BF16 GEMM's time at the table's shape nearest (m, n, k)."""
    nk = min({(r["n"], r["k"]) for r in rows if r["gemm_dtype"] == "bfloat16"},
             key=lambda s: abs(math.log(s[0] / n)) + abs(math.log(s[1] / k)))
    mm = _nearest(rows, "m", m, gemm_dtype="bfloat16", n=nk[0], k=nk[1])
    return _mean_s(rows, gemm_dtype="bfloat16", m=mm, n=nk[0], k=nk[1])


def _tables(repo: Path, system: str, engine: str, version: str) -> dict[str, list[dict]]:
    """The MLA module, GQA attention and GEMM tables of one engine version on ``system``."""
    out = {"gemm": _table(repo, system, "gemm", engine, version, "gemm_perf.parquet")}
    for phase in ("generation", "context"):
        out[f"mla_{phase}"] = _table(repo, system, "mla", engine, version,
                                     f"mla_{phase}_module_perf.parquet")
        out[f"attention_{phase}"] = _table(repo, system, "attention", engine, version,
                                           f"{phase}_attention_perf.parquet")
    return out


def block_parts(tables: dict[str, list[dict]], tp: int, phase: str,
                size: int) -> dict[str, float]:
    """Seconds of each of :data:`~napkin.calibration.mla_blocks.PARTS` at ``tp`` ranks: decode
    (``phase`` ``generation``) of ``size`` sequences at a :data:`CONTEXT`-token context, or
    prefill (``context``) of one ``size``-token prompt; BF16."""
    mla, gqa = load_model(MLA_MODEL).blocks[-1].attention, load_model(GQA_MODEL)
    g = gqa.blocks[-1].attention
    heads, kv_heads = g.num_heads // tp, max(g.num_kv_heads // tp, 1)
    module, attention = tables[f"mla_{phase}"], tables[f"attention_{phase}"]
    mla_match = {"num_heads": mla.num_heads // tp, "gemm_type": "bfloat16",
                 "kv_cache_dtype": "bfloat16"}
    gqa_match = {"num_heads": heads, "num_key_value_heads": kv_heads,
                 "head_dim": g.qk_head_dim, "kv_cache_dtype": "bfloat16", "window_size": 0}
    if phase == "generation":
        at = {"batch_size": size}
        mla_at = {**at, "step": _nearest(module, "step", CONTEXT, **mla_match, **at)}
        gqa_at = {**at, "step": _nearest(attention, "step", CONTEXT, **gqa_match, **at)}
    else:
        mla_at = gqa_at = {"batch_size": 1, "isl": size}
    gemm = tables["gemm"]
    return {"mla_module": _mean_s(module, **mla_match, **mla_at),
            "gqa_attention": _mean_s(attention, **gqa_match, **gqa_at),
            "gqa_qkv": _gemm_s(gemm, size, (heads + 2 * kv_heads) * g.qk_head_dim,
                               gqa.hidden_size),
            "gqa_output": _gemm_s(gemm, size, gqa.hidden_size, heads * g.qk_head_dim)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="ai-dynamo/aiconfigurator: a checkout or its git "
                                            "directory")
    ap.add_argument("--system", default="h100_sxm", help="aiconfigurator's system folder")
    ap.add_argument("--gpu", default="h100-sxm", help="napkin's catalog id of that GPU")
    ap.add_argument("--tp", type=whole_number, default=8, help="tensor-parallel ranks")
    ap.add_argument("--versions", nargs="*", default=[f"{k}={v}" for k, v in VERSIONS.items()],
                    metavar="ENGINE=VERSION")
    ap.add_argument("--batch", nargs="+", type=whole_number, default=[1, 4, 16, 64])
    ap.add_argument("--prompt", nargs="+", type=whole_number, default=[128, 1024, 8192])
    ap.add_argument("--out", type=Path, default=None,
                    help="write the decode points the shipped table holds to this CSV")
    args = ap.parse_args()
    if not args.repo.is_dir():
        ap.error(f"repo: {args.repo} is not a folder")
    if any(v.count("=") != 1 or not all(v.split("=")) for v in args.versions):
        ap.error("--versions: give ENGINE=VERSION pairs, e.g. trtllm=1.3.0rc10")
    heads = load_model(MLA_MODEL).blocks[-1].attention.num_heads
    if heads % args.tp:
        ap.error(f"--tp: {args.tp} does not divide {MLA_MODEL}'s {heads} heads")
    try:
        load_accelerator(args.gpu)
    except NapkinError as e:
        ap.error(f"--gpu: {e}")
    mla_layers = sum(1 for b in load_model(MLA_MODEL).blocks if b.attention.kind == "mla")
    shipped: list[BlockRow] = []
    for engine, version in (v.split("=", 1) for v in args.versions):
        try:
            tables = _tables(args.repo, args.system, engine, version)
            shown = [(f"decode, {b} sequence{'s' * (b > 1)}", block_parts(tables, args.tp,
                                                                          "generation", b))
                     for b in args.batch]
            shown += [(f"prefill, one {n:,}-token prompt",
                       block_parts(tables, args.tp, "context", n)) for n in args.prompt]
            shipped += [BlockRow(engine, version, tp, b, part, seconds)
                        for tp in SHIPPED_TP for b in SHIPPED_BATCH
                        for part, seconds in block_parts(tables, tp, "generation", b).items()]
            model = load_profile(engine).model
        except NapkinError as e:
            ap.error(f"{engine} {version}: {e}")
        layer_s = model.coefficients[TERMS.index("layer")]
        print(f"{engine} {version} on {args.system}, TP {args.tp} (profile '{engine}': "
              f"{layer_s * 1e6:.1f} µs fixed a layer)")
        for case, t in shown:
            mla_s = t["mla_module"]
            gqa_s = t["gqa_attention"] + t["gqa_qkv"] + t["gqa_output"]
            extra = mla_s - gqa_s
            print(f"  {case:<34} MLA module {mla_s * 1e6:8.1f} µs   GQA block "
                  f"{gqa_s * 1e6:8.1f} µs   MLA − GQA {extra * 1e6:+8.1f} µs a layer, "
                  f"{extra * mla_layers * 1e3:+6.2f} ms over {mla_layers} layers")
        mine = [r for r in shipped if r.engine == engine]
        fixed, held = mla_layer_s(mine, engine, model, args.gpu), holdout(mine, engine, model,
                                                                          args.gpu)
        print(f"  mla_layer over TP {', '.join(map(str, SHIPPED_TP))} × "
              f"{', '.join(map(str, SHIPPED_BATCH))} sequences: {fixed * 1e6:.1f} µs at the "
              f"H100's clock; the MLA block held out by TP size {held.held_out:.1%} "
              f"(without it {held.without:.1%}; {held.points} points)")
    if args.out is not None:
        with args.out.open("w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(("engine", "version", "tp", "batch", "part", "latency_ms"))
            w.writerows((r.engine, r.version, r.tp, r.batch, r.part,
                         f"{r.latency_s * 1e3:.6g}") for r in shipped)
        print(f"{len(shipped)} rows → {args.out}")


if __name__ == "__main__":
    main()
