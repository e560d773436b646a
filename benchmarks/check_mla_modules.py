"""What an MLA or DSA attention block costs the engines beyond a GQA one, on their own timings.

napkin's fitted profiles charge every decoder layer one fixed time (``layer``, set on GQA
models) and time attention by its FLOPs and bytes, so an MLA layer — more kernels a layer:
the query and latent down-projections, two norms, the up-projections or, in decode, the
absorbed batched matmuls on each side of the latent attention, rotary on a split head — is
charged the fixed time of a GQA one. aiconfigurator (Apache-2.0) times the whole MLA block of
DeepSeek-V3 as one module on each GPU and engine under CUDA graphs
(``aic-core/src/aiconfigurator_core/systems/data/<system>/mla/<engine>/<version>/
mla_{generation,context}_module_perf.parquet``; ``num_heads`` the rank's heads; TensorRT-LLM,
vLLM), its kernels apart (``mla/.../generation_mla_perf.parquet``, ``mla_bmm/.../
mla_bmm_perf.parquet``, the projections in ``gemm/.../gemm_perf.parquet``: SGLang's block is
their sum, and where an engine has both the script prints what the sum gives beside the
module), and the pieces of a GQA block (``attention/.../{generation,context}_attention_perf
.parquet``, ``gemm_perf.parquet``). This script prints, per engine, for DeepSeek-V3's block at
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

The engine's DSA modules (``sparse_attention/.../dsa_generation_module_perf.parquet``:
DeepSeek-V3.2's and GLM-5's blocks, their MLA and indexer) give ``dsa_layer`` the same way, held
out by TP size and by model.

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
from extract_moe_kernels import add_source_arguments, checked_sources, read_repo_file
from napkin.calibration.mla_blocks import (
    COLUMNS,
    CONTEXT,
    GQA_MODEL,
    GQA_PARTS,
    MODELS,
    BlockRow,
    holdout,
    layer_s,
)
from napkin.calibration.profile import load_profile
from napkin.calibration.terms import TERMS
from napkin.catalog import load_model
from napkin.errors import NapkinError

MLA_MODEL = MODELS["mla"][0]
VERSIONS = {"trtllm": "1.3.0rc10", "vllm": "0.19.0", "sglang": "0.5.9"}
"""The engine versions read: TensorRT-LLM's and vLLM's with an MLA module table on H100 and
B200; SGLang has none, so its block is its kernels summed (``mla``, ``mla_bmm``, ``gemm``)."""
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


TABLES = {"module_generation": ("mla", "mla_generation_module_perf.parquet"),
          "module_context": ("mla", "mla_context_module_perf.parquet"),
          "kernel": ("mla", "generation_mla_perf.parquet"),
          "bmm": ("mla_bmm", "mla_bmm_perf.parquet"),
          "gemm": ("gemm", "gemm_perf.parquet"),
          "attention_generation": ("attention", "generation_attention_perf.parquet"),
          "attention_context": ("attention", "context_attention_perf.parquet"),
          "dsa": ("sparse_attention", "dsa_generation_module_perf.parquet")}
"""The tables read (op folder, file); an engine version lacking one goes without it."""


def _tables(repo: Path, system: str, engine: str, version: str) -> dict[str, list[dict]]:
    """Those of :data:`TABLES` one engine version has on ``system``; one error where it has no
    MLA block (neither the module nor its kernels) or no GQA block."""
    out = {}
    for name, (op, file) in TABLES.items():
        try:
            out[name] = _table(repo, system, op, engine, version, file)
        except NapkinError as e:
            missing = e
    if not ({"gemm", "attention_generation"} <= set(out)
            and ("module_generation" in out or {"kernel", "bmm"} <= set(out))):
        raise missing
    return out


def block_parts(tables: dict[str, list[dict]], tp: int, phase: str, size: int,
                kernels: bool = False) -> dict[str, float]:
    """Seconds of the MLA block's parts and the GQA block's
    (:data:`~napkin.calibration.mla_blocks.PARTS`) at ``tp`` ranks: decode (``phase``
    ``generation``) of ``size`` sequences at a :data:`CONTEXT`-token context, or prefill
    (``context``, modules only) of one ``size``-token prompt; BF16. The MLA block is its module
    where the engine times one, else (or with ``kernels``) its kernels
    (:data:`~napkin.calibration.mla_blocks.MLA_KERNELS`)."""
    mla_model, gqa = load_model(MLA_MODEL), load_model(GQA_MODEL)
    mla = mla_model.blocks[-1].attention
    g = gqa.blocks[-1].attention
    heads, kv_heads = g.num_heads // tp, max(g.num_kv_heads // tp, 1)
    attention, gemm = tables[f"attention_{phase}"], tables["gemm"]
    gqa_match = {"num_heads": heads, "num_key_value_heads": kv_heads,
                 "head_dim": g.qk_head_dim, "kv_cache_dtype": "bfloat16"}
    if "window_size" in attention[0]:
        gqa_match["window_size"] = 0
    at = {"batch_size": size} if phase == "generation" else {"batch_size": 1, "isl": size}
    gqa_at = ({**at, "step": _nearest(attention, "step", CONTEXT, **gqa_match, **at)}
              if phase == "generation" else at)
    out = {"gqa_attention": _mean_s(attention, **gqa_match, **gqa_at),
           "gqa_qkv": _gemm_s(gemm, size, (heads + 2 * kv_heads) * g.qk_head_dim,
                              gqa.hidden_size),
           "gqa_output": _gemm_s(gemm, size, gqa.hidden_size, heads * g.qk_head_dim)}
    rank_heads = mla.num_heads // tp
    if not kernels and f"module_{phase}" in tables:
        module = tables[f"module_{phase}"]
        match = {"num_heads": rank_heads, "gemm_type": "bfloat16", "kv_cache_dtype": "bfloat16"}
        step = ({"step": _nearest(module, "step", CONTEXT, **match, **at)}
                if phase == "generation" else {})
        return {"mla_module": _mean_s(module, **match, **at, **step), **out}
    if phase != "generation":
        raise NapkinError("prefill: no MLA module table (its kernels are summed in decode only)")
    linear = {lin.name: lin for lin in mla_model.blocks[-1].linears}
    kernel, bmm = tables["kernel"], tables["bmm"]
    match = {"num_heads": rank_heads, "kv_cache_dtype": "bfloat16", "batch_size": size}
    out["mla_attention"] = _mean_s(kernel, step=_nearest(kernel, "step", CONTEXT, **match),
                                   **match)
    for part, op in (("mla_bmm_pre", "mla_gen_pre"), ("mla_bmm_post", "mla_gen_post")):
        m = {"op_name": op, "bmm_dtype": "bfloat16", "num_heads": rank_heads}
        out[part] = _mean_s(bmm, num_tokens=_nearest(bmm, "num_tokens", size, **m), **m)
    q_a, kv_a, o = linear["attn/q_a"], linear["attn/kv_a"], linear["attn/o"]
    out["mla_qkv_a"] = _gemm_s(gemm, size, q_a.out_features + kv_a.out_features,
                               q_a.in_features)
    out["mla_q_b"] = _gemm_s(gemm, size, rank_heads * mla.qk_head_dim, q_a.out_features)
    out["mla_output"] = _gemm_s(gemm, size, o.out_features, rank_heads * mla.v_head_dim)
    return out


DSA_NAMES = {"deepseek-v3.2": "deepseek-ai/DeepSeek-V3.2", "glm-5": "zai-org/GLM-5"}
"""The DSA tables' ``model`` of each catalog model."""


def dsa_module_s(tables: dict[str, list[dict]], model: str, tp: int, batch: int) -> float | None:
    """``model``'s DSA module at ``tp`` ranks over ``batch`` sequences at a :data:`CONTEXT`-
    token context, BF16; None where the table has no such point (that share of heads)."""
    heads = load_model(model).blocks[-1].attention.num_heads
    match = {"model": DSA_NAMES[model], "num_heads": heads // tp, "gemm_type": "bfloat16",
             "kv_cache_dtype": "bfloat16", "batch_size": batch}
    try:
        return _mean_s(tables["dsa"], step=_nearest(tables["dsa"], "step", CONTEXT, **match),
                       **match)
    except NapkinError:
        return None


def points(engine: str, version: str, tables: dict[str, list[dict]],
           kernels: bool = False) -> list[BlockRow]:
    """The shipped tables' rows of one engine version: its GQA parts, its MLA block (module or
    kernels) and its DSA modules at every TP of :data:`SHIPPED_TP` and batch of
    :data:`SHIPPED_BATCH`; with ``kernels`` the MLA kernels and GQA parts only."""
    out = []
    for tp in SHIPPED_TP:
        for b in SHIPPED_BATCH:
            parts = block_parts(tables, tp, "generation", b, kernels)
            out += [BlockRow(engine, version, GQA_MODEL if p in GQA_PARTS else MLA_MODEL, tp,
                             b, p, v) for p, v in parts.items()]
            if "dsa" in tables and not kernels:
                for model in MODELS["dsa"]:
                    t = dsa_module_s(tables, model, tp, b)
                    if t is not None:
                        out.append(BlockRow(engine, version, model, tp, b, "dsa_module", t))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_source_arguments(ap, VERSIONS)
    ap.add_argument("--tp", type=whole_number, default=8, help="tensor-parallel ranks")
    ap.add_argument("--batch", nargs="+", type=whole_number, default=[1, 4, 16, 64])
    ap.add_argument("--prompt", nargs="+", type=whole_number, default=[128, 1024, 8192])
    ap.add_argument("--out", type=Path, default=None,
                    help="write the decode points the shipped table holds to this CSV")
    args = ap.parse_args()
    versions = checked_sources(ap, args)
    heads = load_model(MLA_MODEL).blocks[-1].attention.num_heads
    if heads % args.tp:
        ap.error(f"--tp: {args.tp} does not divide {MLA_MODEL}'s {heads} heads")
    mla_layers = sum(1 for b in load_model(MLA_MODEL).blocks if b.attention.kind == "mla")
    shipped: list[BlockRow] = []
    for engine, version in versions.items():
        try:
            tables = _tables(args.repo, args.system, engine, version)
            shown = [(f"decode, {b} sequence{'s' * (b > 1)}", block_parts(tables, args.tp,
                                                                          "generation", b))
                     for b in args.batch]
            if "module_context" in tables:
                shown += [(f"prefill, one {n:,}-token prompt",
                           block_parts(tables, args.tp, "context", n)) for n in args.prompt]
            mine = points(engine, version, tables)
            summed = (points(engine, version, tables, kernels=True)
                      if {"module_generation", "kernel", "bmm"} <= set(tables) else [])
            model = load_profile(engine).model
        except NapkinError as e:
            ap.error(f"{engine} {version}: {e}")
        layer = model.coefficients[TERMS.index("layer")]
        print(f"{engine} {version} on {args.system}, TP {args.tp} (profile '{engine}': "
              f"{layer * 1e6:.1f} µs fixed a layer)")
        what = "MLA module" if "mla_module" in shown[0][1] else "MLA kernels"
        for case, t in shown:
            mla_s = sum(v for k, v in t.items() if k.startswith("mla_"))
            gqa_s = sum(v for k, v in t.items() if k.startswith("gqa_"))
            extra = mla_s - gqa_s
            print(f"  {case:<34} {what} {mla_s * 1e6:8.1f} µs   GQA block "
                  f"{gqa_s * 1e6:8.1f} µs   MLA − GQA {extra * 1e6:+8.1f} µs a layer, "
                  f"{extra * mla_layers * 1e3:+6.2f} ms over {mla_layers} layers")
        grid = (f"TP {', '.join(map(str, SHIPPED_TP))} × {', '.join(map(str, SHIPPED_BATCH))} "
                "sequences")
        for kind in ("mla", "dsa"):
            if not any(r.model in MODELS[kind] and r.part not in GQA_PARTS for r in mine):
                continue
            held = [holdout(mine, engine, model, args.gpu, kind, by) for by in ("tp", "model")]
            by_model = (f"; by model {held[1].held_out:.1%}" if len(MODELS[kind]) > 1 else "")
            fixed = layer_s(mine, engine, model, args.gpu, kind)
            print(f"  {kind}_layer over {grid}: {fixed * 1e6:.1f} µs at the H100's clock; "
                  f"the {kind.upper()} block held out by TP size {held[0].held_out:.1%}"
                  f"{by_model} (without it {held[0].without:.1%}; {held[0].points} points)")
        if summed:
            print(f"  mla_layer from its MLA kernels summed (as SGLang's): "
                  f"{layer_s(summed, engine, model, args.gpu) * 1e6:.1f} µs")
        shipped += mine
    if args.out is not None:
        with args.out.open("w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(COLUMNS)
            w.writerows((r.engine, r.version, r.model, r.tp, r.batch, r.part,
                         f"{r.latency_s * 1e3:.6g}") for r in shipped)
        print(f"{len(shipped)} rows → {args.out}")


if __name__ == "__main__":
    main()
