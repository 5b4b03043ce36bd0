"""Extract MoE and MLA timing tables from NVIDIA's aiconfigurator into data/measured/kernels/.

    /path/to/venv-with-aiconfigurator/bin/python tools/extract_moe_kernels.py          # write the CSVs
    /path/to/venv-with-aiconfigurator/bin/python tools/extract_moe_kernels.py --check  # exit 1 if they differ

The sibling of ``tools/extract_kernels.py`` (GEMM, attention, all-reduce), whose GPU map, version order
and CSV format it reuses; like it, it runs only where the ``aiconfigurator`` package (Apache-2.0), pandas
and pyarrow are installed, and never reads the end-to-end serving rows (``silicon_sample.csv``).

What it reads, under ``aiconfigurator_core/systems/data/<system>/``:

* ``moe/<framework>/<version>/moe_perf.parquet``: one fused MoE layer (routing, both expert GEMMs, the
  activation) on rank 0 of ``moe_tp × moe_ep`` GPUs. Kept: the ``distribution == "balanced"`` rows of the
  expert shapes of the course's MoE models (``MOE_MODELS``, read from ``data/models.toml``), token counts
  1 … 8192, the splits ``SPLITS``, the formats ``MOE_DTYPES``.
* ``mla/<framework>/<version>/{generation,context}_mla_perf.parquet`` (SGLang, TensorRT-LLM): the MLA
  attention kernel alone; ``mla_{generation,context}_module_perf.parquet`` (vLLM, TensorRT-LLM): the whole
  MLA module (projections, attention, output projection) of DeepSeek-V3's shape.

For each framework the newest version holding rows of the kept shapes is read. Latencies go from ms to s.
Writes ``moe.csv``, ``mla.csv`` and ``moe_mla_sources.csv`` (the kernel each group timed); see
data/measured/README.md for the columns.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract_kernels import (  # noqa: E402
    FRAMEWORKS,
    GPU_IDS,
    MS,
    ROOT,
    csv_text,
    package_root,
    version_key,
    write_or_check,
)

MOE_MODELS = (
    "mixtral-8x7b",
    "deepseek-v3",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "gpt-oss-20b",
    "gpt-oss-120b",
)
# aiconfigurator's moe_dtype -> this project's name. int4_wo is Marlin's W4A16 (the kernel family vLLM runs
# MXFP4 experts with on Ampere); w4a16_mxfp4 keeps MXFP4 weights and multiplies in BF16.
MOE_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8-block128", "w4a16_mxfp4": "w4a16-mxfp4",
              "int4_wo": "int4"}  # fmt: skip
MOE_TOKENS = (1, 4, 8, 16, 32, 64, 128, 512, 2048, 8192)
SPLITS = ((1, 1), (8, 1), (1, 8))  # (moe_tp, moe_ep): one GPU, 8-way tensor parallel, 8-way expert parallel
# DeepSeek-V3's router picks 4 of 8 expert groups, then 8 experts in them. SGLang's and vLLM's collectors run
# the model's own router on aiconfigurator's "balanced" logits; TensorRT-LLM's runs a plain top-k on them.
GROUPED = {("deepseek-v3", "sglang"): "grouped-8-4", ("deepseek-v3", "vllm"): "grouped-8-4"}

MLA_HEADS = (128, 32, 16)  # DeepSeek-V3's 128 heads on 1, 4 and 8 GPUs
MLA_BATCH = (1, 4, 16, 64, 256)
MLA_CONTEXT = (128, 1024, 8192, 65536)  # KV length at decode
MLA_PROMPT = (128, 512, 1024, 2048, 4096, 8192, 16384)
MLA_PROMPT_BATCH = (1, 4, 16)
MLA_PROMPT_TOKENS = 32768  # at most batch × prompt tokens (an L40S takes 2 s for 4 × 16384)
KV = {"bfloat16": "bf16", "fp8": "fp8"}


def moe_shapes() -> dict[tuple[int, int, int, int], str]:
    """(hidden, expert inter, top-k, experts) -> model id, from data/models.toml."""
    models = {m["id"]: m for m in tomllib.loads((ROOT / "data" / "models.toml").read_text())["model"]}
    return {(m["hidden_size"], m.get("moe_intermediate_size", m["intermediate_size"]), m["experts_per_token"],
             m["experts"]): i for i in MOE_MODELS for m in [models[i]]}  # fmt: skip


def newest_with(system_dir: Path, op: str, framework: str, table: str, keep) -> tuple[Path | None, object]:
    """The newest ``<op>/<framework>/<version>`` folder whose ``table`` has rows ``keep(df)`` selects."""
    import pandas as pd

    base = system_dir / op / framework
    found = [d for d in base.glob("*") if (d / table).is_file()] if base.is_dir() else []
    for d in sorted(found, key=lambda d: version_key(d.name), reverse=True):
        sel = keep(pd.read_parquet(d / table))
        if len(sel):
            return d, sel
    return None, None


def _source(sources: list, gpu: str, d: Path, op: str, dtype: str, part) -> None:
    for kernel, rows in part.groupby("kernel_source").size().items():
        sources.append({"gpu": gpu, "framework": d.parent.name, "version": d.name, "op": op, "dtype": dtype,
                        "path": str(d.relative_to(d.parents[3])), "kernel_source": kernel,
                        "rows": rows})  # fmt: skip


def _clamped_ep(framework: str, raw_dtype: str, df, shapes):
    """Rows whose benchmark times work no engine does: SGLang's collector, on its plain Triton path (BF16 and
    block-FP8 experts of models routed by a softmax top-k) with EP > 1, points the pairs of remote experts
    at local expert 0 with zero weight ("clamp -1 to 0", collector/sglang/collect_moe.py), so rank 0
    multiplies every pair of its tokens."""
    if framework != "sglang" or raw_dtype not in ("bfloat16", "fp8_block"):
        return df.moe_ep_size < 0  # none
    model = df.index.map(
        lambda i: shapes[tuple(df.loc[i, ["hidden_size", "inter_size", "topk", "num_experts"]])]
    )
    return (df.kernel_source == "sglang_fused_moe_triton") & (model != "deepseek-v3") & (df.moe_ep_size > 1)


def moe_rows(system_dir: Path, gpu: str, sources: list) -> list[dict]:
    shapes, rows = moe_shapes(), []
    keys = ["hidden_size", "inter_size", "topk", "num_experts"]

    def keep(df):
        if not {"distribution", "moe_tp_size", *keys} <= set(df.columns):
            return df.iloc[:0]  # another schema (a model-specific table)
        df = df[
            (df.distribution == "balanced")
            & df.moe_dtype.isin(list(MOE_DTYPES))
            & df.num_tokens.isin(MOE_TOKENS)
        ]
        df = df.loc[[s in SPLITS for s in zip(df.moe_tp_size, df.moe_ep_size, strict=True)]]
        return df.loc[[s in shapes for s in zip(*(df[k] for k in keys), strict=True)]]

    for fw in FRAMEWORKS:
        d, df = newest_with(system_dir, "moe", fw, "moe_perf.parquet", keep)
        if d is None:
            continue
        for raw, part in df.groupby("moe_dtype"):
            part = part[~_clamped_ep(fw, raw, part, shapes)]
            _source(sources, gpu, d, "moe", MOE_DTYPES[raw], part)
            # A shape timed twice by one kernel keeps its median; timed by two kernels (none in the kept rows
            # of aiconfigurator 0.12.0), the faster: the one an engine's autotuner would pick.
            shape = keys + ["num_tokens", "moe_tp_size", "moe_ep_size"]
            part = part.groupby(shape + ["kernel_source"], as_index=False)["latency"].median()
            for r in part.groupby(shape, as_index=False)["latency"].min().itertuples():
                model = shapes[(r.hidden_size, r.inter_size, r.topk, r.num_experts)]
                rows.append({"gpu": gpu, "framework": fw, "version": d.name, "op": "moe",
                             "num_tokens": r.num_tokens, "hidden": r.hidden_size, "inter": r.inter_size,
                             "topk": r.topk, "experts": r.num_experts, "moe_tp": r.moe_tp_size,
                             "moe_ep": r.moe_ep_size, "dtype": MOE_DTYPES[raw],
                             "routing": GROUPED.get((model, fw), "balanced"),
                             "latency_s": r.latency * MS})  # fmt: skip
    return rows


def _mla_keep(framework: str, phase: str, module: bool):
    def keep(df):
        df = df[df.num_heads.isin(MLA_HEADS) & df.kv_cache_dtype.isin(list(KV))]
        if module:
            df = df[(df.gemm_type == "fp8_block") & (df.model == "deepseek-ai/DeepSeek-V3")]
        if phase == "generation":
            # KV length: the kernels' and TensorRT-LLM's module ``step`` counts cached tokens (+ the new one);
            # vLLM's module ``step`` is the sequence length, new token included.
            df = df.assign(context=df.step + (0 if (module and framework == "vllm") else 1))
            # the KV lengths timed are 2^n (kernels, vLLM's module) or 2^n + 1 (TensorRT-LLM's module)
            return df[
                df.batch_size.isin(MLA_BATCH)
                & (df.context.isin(MLA_CONTEXT) | (df.context - 1).isin(MLA_CONTEXT))
            ]
        df = df[(df.step == 0) & (df.kv_cache_dtype == "bfloat16")]
        df = df[df.batch_size.isin(MLA_PROMPT_BATCH) & df.isl.isin(MLA_PROMPT)]
        return df[df.batch_size * df.isl <= MLA_PROMPT_TOKENS].assign(context=df.isl)

    return keep


# table, phase, whole module?, how the timed attention forms its scores (see README: "absorbed" works on
# the 576-wide latent, "expanded" on per-head 192-wide keys and 128-wide values)
MLA_TABLES = (
    ("generation_mla_perf.parquet", "generation", False),
    ("context_mla_perf.parquet", "context", False),
    ("mla_generation_module_perf.parquet", "generation", True),
    ("mla_context_module_perf.parquet", "context", True),
)


def mla_form(framework: str, phase: str, sm: int) -> str:
    """The attention form a collector timed: decode is always absorbed. Prefill: TensorRT-LLM and vLLM
    expand K and V per head; SGLang 0.5.14's collector feeds its default backend the latent (576/512-wide)
    heads except on Blackwell, where trtllm_mla takes expanded heads (collector/sglang/collect_mla.py)."""
    if phase == "generation" or (framework == "sglang" and sm not in (100, 103)):
        return "absorbed"
    return "expanded"


SM = {"h100-sxm": 90, "h200": 90, "b200": 100, "b300": 103, "gb200": 100, "a100-80gb-sxm": 80, "l40s": 89}


def mla_rows(system_dir: Path, gpu: str, sources: list) -> list[dict]:
    rows = []
    for fw in FRAMEWORKS:
        for table, phase, module in MLA_TABLES:
            d, df = newest_with(system_dir, "mla", fw, table, _mla_keep(fw, phase, module))
            if d is None:
                continue
            op = f"mla_{phase}" + ("_module" if module else "")
            dtype = "fp8-block128" if module else "bf16"
            _source(sources, gpu, d, op, dtype, df)
            # two backends timing one shape (vLLM on Hopper: FlashMLA and FlashAttention-MLA): the faster
            keys = ["num_heads", "batch_size", "context", "kv_cache_dtype"]
            df = df.groupby(keys + ["kernel_source"], as_index=False)["latency"].median()
            for r in df.groupby(keys, as_index=False)["latency"].min().itertuples():
                rows.append({"gpu": gpu, "framework": fw, "version": d.name, "op": op, "batch": r.batch_size,
                             "context": r.context, "heads": r.num_heads, "dtype": dtype,
                             "kv_dtype": KV[r.kv_cache_dtype], "form": mla_form(fw, phase, SM[gpu]),
                             "latency_s": r.latency * MS})  # fmt: skip
    return rows


def extract() -> dict[str, str]:
    """{file name: CSV text} for every table this tool writes."""
    systems = package_root() / "systems" / "data"
    tables = {"moe.csv": [], "mla.csv": [], "moe_mla_sources.csv": []}
    for system, gpu in GPU_IDS.items():
        sdir = systems / system
        if not any(sdir.glob("*/*/*/*.parquet")):
            continue
        tables["moe.csv"] += moe_rows(sdir, gpu, tables["moe_mla_sources.csv"])
        tables["mla.csv"] += mla_rows(sdir, gpu, tables["moe_mla_sources.csv"])
    return {name: csv_text(rows) for name, rows in tables.items()}


def main(argv=None) -> int:
    return write_or_check(extract, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
