"""Extract compact per-kernel timing tables from NVIDIA's aiconfigurator into data/measured/kernels/.

    /path/to/venv-with-aiconfigurator/bin/python tools/extract_kernels.py          # write the CSVs
    /path/to/venv-with-aiconfigurator/bin/python tools/extract_kernels.py --check  # exit 1 if they differ

Runs only where the ``aiconfigurator`` package (Apache-2.0, github.com/ai-dynamo/aiconfigurator) is
installed together with pandas and pyarrow, e.g. a scratch venv: ``pip install aiconfigurator==0.12.0``.
Neither is a dependency of this project; the CSVs it writes are committed as data and read by
``roofline.calibration.kernels`` with the standard library only.

What it reads: the per-operation timing database the package ships under
``aiconfigurator_core/systems/data/<system>/<op>/<framework>/<version>/*.parquet`` (GEMM, context and
generation attention, NCCL and the engines' own all-reduce), for the systems that have a row in
``data/gpus.toml`` and for each framework at its newest version that holds the table. It never reads the
end-to-end serving rows (``silicon_sample.csv``). Latencies are converted from ms to s; all-reduce
message sizes from elements to bytes. See data/measured/README.md for the columns.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "measured" / "kernels"

# aiconfigurator system -> this project's GPU id (data/gpus.toml). Systems not listed have no row here:
# gb300, a100_pcie, a30, b60 (Intel Arc Pro B60), rtx_pro_6000_server (the project's rtx-pro-6000 row is
# the Workstation Edition, a different board: its note says so).
GPU_IDS = {
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "a100_sxm": "a100-80gb-sxm",  # aiconfigurator's a100_sxm.yaml: 80 GiB, 2.039 TB/s
    "l40s": "l40s",
    "h100_pcie": "h100-pcie",  # empty in aiconfigurator 0.12.0 (placeholder folder)
    "l4": "l4",  # empty in aiconfigurator 0.12.0
}
FRAMEWORKS = ("vllm", "trtllm", "sglang")
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8-block128", "half": "fp16"}
MS = 1e-3

# The shape grid: LLM layer sizes on a log grid, with the one-past-a-tile sizes that show tile effects.
# BF16 on the full grid; the FP8 formats on a coarser one (m without the tile probes, n, k in steps of 4).
GEMM_M = {
    "bf16": (1, 2, 4, 8, 16, 17, 32, 33, 48, 64, 65, 96, 128, 129, 192, 256, 257, 512, 1024, 2048, 4096,
             8192, 16384),
    "fp8": (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192, 16384),
}  # fmt: skip
GEMM_M["fp8-block128"] = GEMM_M["fp8"]
GEMM_NK = {"bf16": (1024, 2048, 4096, 8192, 16384), "fp8": (1024, 4096, 16384),
           "fp8-block128": (1024, 4096, 16384)}  # fmt: skip
HEADS_CONTEXT = ((32, 8, 128), (64, 8, 128))  # (query heads, KV heads, head dim): Llama 3 8B and 70B
HEADS_GENERATION = {(32, 8, 128): ("bf16", "fp8"), (64, 8, 128): ("bf16",)}
CONTEXT_ISL = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
DECODE_BATCH = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DECODE_CONTEXT = (128, 512, 2048, 8192, 32768)
ALLREDUCE_ELEMENTS = tuple(4**i * 256 for i in range(11))  # 256 ... 268 M elements


def package_root() -> Path:
    """The folder of the installed ``aiconfigurator_core`` package; exits saying how to get it if missing."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(
            "tools/extract_kernels.py needs the aiconfigurator package (with pandas and pyarrow): run it "
            "with the python of a scratch venv where `pip install aiconfigurator` was done. The project "
            "itself reads only the committed CSVs in data/measured/kernels/."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def version_key(v: str):
    """A release folder's name as a comparable version (``packaging.version.Version``)."""
    from packaging.version import Version

    return Version(v)


def newest(system_dir: Path, op: str, framework: str, table: str) -> Path | None:
    """The newest ``<op>/<framework>/<version>`` folder of ``system_dir`` that holds ``table``."""
    base = system_dir / op / framework
    found = [d for d in base.glob("*") if (d / table).is_file()] if base.is_dir() else []
    return max(found, key=lambda d: version_key(d.name)) if found else None


def _pick_kernel(df, keys: list[str], sources: list, meta: dict):
    """One kernel per shape set: the kernel_source covering most of the selected shapes (then most rows)."""
    if df.empty:
        return df
    cover = df.groupby("kernel_source").apply(lambda g: (len(g.drop_duplicates(keys)), len(g)))
    best = max(cover.index, key=lambda k: (cover[k], k))
    out = df[df.kernel_source == best]
    out = out.groupby(keys, as_index=False)["latency"].median()  # duplicate shapes: their median
    sources.append({**meta, "kernel_source": best, "rows": len(out)})
    return out


def _common(gpu: str, d: Path, op: str) -> dict:
    return {"gpu": gpu, "framework": d.parent.name, "version": d.name, "op": op}


def gemm_rows(system_dir: Path, gpu: str, sources: list) -> list[dict]:
    import pandas as pd

    rows = []
    for fw in FRAMEWORKS:
        d = newest(system_dir, "gemm", fw, "gemm_perf.parquet")
        if d is None:
            continue
        df = pd.read_parquet(d / "gemm_perf.parquet")
        for raw, dtype in DTYPES.items():
            if dtype not in GEMM_NK:
                continue
            nk = GEMM_NK[dtype]
            sel = df[(df.gemm_dtype == raw) & df.m.isin(GEMM_M[dtype]) & df.n.isin(nk) & df.k.isin(nk)]
            meta = {**_common(gpu, d, "gemm"), "dtype": dtype, "path": str(d.relative_to(system_dir.parent))}
            sel = _pick_kernel(sel, ["m", "n", "k"], sources, meta)
            for r in sel.itertuples():
                rows.append({**_common(gpu, d, "gemm"), "m": r.m, "n": r.n, "k": r.k, "dtype": dtype,
                             "latency_s": r.latency * MS})  # fmt: skip
    return rows


def attention_rows(system_dir: Path, gpu: str, sources: list, phase: str) -> list[dict]:
    import pandas as pd

    rows, table = [], f"{phase}_attention_perf.parquet"
    shape = ["batch_size", "isl", "step", "num_heads", "num_key_value_heads", "head_dim"]
    for fw in FRAMEWORKS:
        d = newest(system_dir, "attention", fw, table)
        if d is None:
            continue
        df = pd.read_parquet(d / table)
        if "window_size" not in df:
            df["window_size"] = 0
        df = df[(df.window_size == 0) & (df.attn_dtype == "bfloat16") & (df.beam_width == 1)]
        if phase == "generation":
            df = df.assign(context=df.isl + df.step)  # KV length incl. the new token (isl 1, step s - 1)
            df = df[df.batch_size.isin(DECODE_BATCH) & df.context.isin(DECODE_CONTEXT)]
            combos = [(h, kv) for h, kvs in HEADS_GENERATION.items() for kv in kvs]
        else:
            df = df[df.isl.isin(CONTEXT_ISL) & (df.step == 0)]
            combos = [(h, "bf16") for h in HEADS_CONTEXT]
        for (heads, kv_heads, head_dim), kv in combos:
            raw_kv = {v: k for k, v in DTYPES.items()}[kv]
            sel = df[(df.num_heads == heads) & (df.num_key_value_heads == kv_heads)
                     & (df.head_dim == head_dim) & (df.kv_cache_dtype == raw_kv)]  # fmt: skip
            op = f"{phase}_attention"
            meta = {**_common(gpu, d, op), "dtype": f"bf16/kv-{kv}/{heads}-{kv_heads}-{head_dim}",
                    "path": str(d.relative_to(system_dir.parent))}  # fmt: skip
            sel = _pick_kernel(sel, shape, sources, meta)
            for r in sel.itertuples():
                row = {**_common(gpu, d, op), "batch": r.batch_size}
                row.update({"isl": r.isl} if phase == "context" else {"context": r.isl + r.step})
                row.update({"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "dtype": "bf16",
                            "kv_dtype": kv, "latency_s": r.latency * MS})  # fmt: skip
                rows.append(row)
    return rows


def allreduce_rows(system_dir: Path, gpu: str, sources: list) -> list[dict]:
    import pandas as pd

    rows = []
    tables = [("nccl", "nccl_perf.parquet", "all_reduce")] + [
        (fw, "custom_allreduce_perf.parquet", "custom_all_reduce") for fw in FRAMEWORKS
    ]
    for fw, table, op in tables:
        d = newest(system_dir, "comm", fw, table)
        if d is None:
            continue
        df = pd.read_parquet(d / table)
        dcol = "nccl_dtype" if "nccl_dtype" in df else "allreduce_dtype"
        df = df[(df.op_name == "all_reduce") & df[dcol].isin(["half", "bfloat16"])
                & df.message_size.isin(ALLREDUCE_ELEMENTS)]  # fmt: skip
        if "backend" in df:  # vLLM times its custom all-reduce eager and under a CUDA graph: the graph
            df = df[df.backend.str.contains("graph")]  # is what its decode steps run
        for dtype_raw, part in df.groupby(dcol):
            dtype = DTYPES[dtype_raw]
            meta = {**_common(gpu, d, op), "dtype": dtype, "path": str(d.relative_to(system_dir.parent))}
            part = _pick_kernel(part, ["num_gpus", "message_size"], sources, meta)
            for r in part.itertuples():
                rows.append({**_common(gpu, d, op), "num_gpus": r.num_gpus,
                             "message_bytes": r.message_size * 2, "dtype": dtype,
                             "latency_s": r.latency * MS})  # fmt: skip
    return rows


def csv_text(rows: list[dict]) -> str:
    """``rows`` as the committed tables' CSV text: numbers to 4 significant digits, ``\n`` line ends."""
    import pandas as pd

    df = pd.DataFrame(rows)
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format="%.4g", lineterminator="\n")
    return buf.getvalue()


def extract() -> dict[str, str]:
    """{file name: CSV text} for every table this tool writes."""
    systems = package_root() / "systems" / "data"
    known = {g["id"] for g in tomllib.loads((ROOT / "data" / "gpus.toml").read_text())["gpu"]}
    tables = {"gemm.csv": [], "context_attention.csv": [], "generation_attention.csv": [],
              "allreduce.csv": [], "sources.csv": []}  # fmt: skip
    for system, gpu in GPU_IDS.items():
        if gpu not in known:
            sys.exit(f"{gpu} (for aiconfigurator's {system}) is not in data/gpus.toml")
        sdir = systems / system
        if not any(sdir.glob("*/*/*/*.parquet")):
            print(f"{system}: no timing tables in this aiconfigurator release; skipped", file=sys.stderr)
            continue
        src = tables["sources.csv"]
        tables["gemm.csv"] += gemm_rows(sdir, gpu, src)
        tables["context_attention.csv"] += attention_rows(sdir, gpu, src, "context")
        tables["generation_attention.csv"] += attention_rows(sdir, gpu, src, "generation")
        tables["allreduce.csv"] += allreduce_rows(sdir, gpu, src)
    return {name: csv_text(rows) for name, rows in tables.items()}


def write_or_check(extract_tables, description: str, argv=None) -> int:
    """The command line of an extraction tool: write ``extract_tables()``'s CSVs to ``OUT``, or with
    ``--check`` exit 1 when the stored ones differ (shared with extract_moe_kernels.py)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 if the stored CSVs differ")
    args = parser.parse_args(argv)
    out = extract_tables()
    if args.check:
        stale = [n for n, text in out.items() if not (OUT / n).is_file() or (OUT / n).read_text() != text]
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in out.items():
        (OUT / name).write_text(text)
        print(f"{name}: {text.count(chr(10)) - 1} rows, {len(text) / 1e3:.0f} kB")
    return 0


def main(argv=None) -> int:
    return write_or_check(extract, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
