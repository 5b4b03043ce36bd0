"""``--from FILE`` for ``diagnose`` and ``calibrate``: a benchmark's result file (``vllm bench serve
--save-result``, SGLang's ``bench_serving`` JSONL, aiperf's ``profile_export_aiperf.json`` or GenAI-Perf's,
``llama-bench -o json`` or ``-o jsonl``), each run placed
on the deployment the user names. The file gives the workload; ``--model``, ``--gpu``, ``--gpus``,
``--weights``, ``--kv`` and ``--engine`` give what it does not say
(``roofline.measure.benchmark_diagnosis``).
"""

from __future__ import annotations

from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.measure import benchmark_diagnosis as bd
from roofline.measure import benchmark_files as bf
from roofline.sim.validation import band_value

TOOL_NAMES = {
    "vllm-bench-serve": "vllm bench serve",
    "sglang-bench-serving": "SGLang bench_serving",
    "aiperf": "aiperf",
    "genai-perf": "GenAI-Perf",
    "llama-bench": "llama-bench",
}


def add_from_arguments(p, group) -> None:
    """``--from FILE`` (in the command's group of measurement sources) and ``--format``."""
    group.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="a benchmark's result file: vllm bench serve --save-result JSON, SGLang bench_serving "
        "JSONL, aiperf profile_export_aiperf.json (or GenAI-Perf's), llama-bench -o json/jsonl (the file "
        "gives the workload)",
    )
    p.add_argument(
        "--format",
        choices=bf.FORMATS,
        default=None,
        help="the file's format, if not recognised from its contents",
    )


def read_runs(args) -> list:
    """The runs of ``--from``, every one of them checked (``roofline.measure.benchmark_files``)."""
    return bf.read_benchmark_file(args.from_file, args.format)


def deployment_options(args, engine: str | None) -> dict:
    """The deployment the user named (``roofline.measure.benchmark_diagnosis.deployment``'s options); a
    ``--weights`` left out is the file's quantization or the model's release, not the option's default."""
    weights = None if args.weights_defaulted or args.weights is None else args.weights
    return {
        "model": args.model,
        "gpu": args.gpu,
        "num_gpus": args.gpus,
        "engine": engine,
        "weights": weights,
        "kv_precision": args.kv,
    }


def diagnosed(args) -> dict:
    """``diagnose --from``'s JSON: the file, its tool, and each run on its deployment."""
    result = bd.diagnose_file(args.from_file, args.format, **deployment_options(args, args.engine))
    for run in result["runs"]:
        opt.check_tensor_parallel(run["model_id"], args.gpus, run["engine"])
    return result


def run_text(d: dict) -> str:
    """One run as the terminal shows it: its deployment and workload, a row per measurement, its flags."""
    w = d["workload"]
    if "test" in w:
        what = f"llama-bench {w['test']}: {w['n_prompt']:,} prompt + {w['n_gen']:,} generated tokens"
    else:
        what = (
            f"{w['completed']:,} requests, {w['concurrency']:,.0f} at a time, {w['mean_input_tokens']:,.0f} "
            f"in / {w['mean_output_tokens']:,.0f} out, {w['duration_s']:,.1f} s"
        )
    head = (
        f"record {d['record']}: {what}\n  on {d['model_id']}, {d['num_gpus']} × {d['gpu_id']}, weights "
        f"{d['weight_precision']}, KV {d['kv_precision']}, engine {d['engine']}"
    )
    rows = []
    for p in d["placements"]:
        mbu = "" if p["mbu"] is None else f"{p['mbu']:.0%}"
        mfu = "" if p["mfu"] is None else f"{p['mfu']:.0%}"
        note = (
            ""
            if p["alone"]
            else f" (at {p['batch'] if p['kind'] == 'tpot' else w['concurrency']:,.0f} at a time)"
        )
        rows.append(
            [
                p["metric"].upper(),
                out.fmt_seconds(p["measured_s"]),
                out.fmt_seconds(p["floor_s"]),
                out.fmt_seconds(p["achievable_s"]),
                f"{p['measured_over_floor']:.2f}×",
                mbu,
                mfu,
                p["sits_in"].split(" (")[0] + note,
            ]
        )
    headers = ["", "measured", "floor", f"{d['engine']}", "×floor", "MBU", "MFU", "sits in"]
    flags = d["flags"] or ["none"]
    replayed = [replay_text(d["replay"])] if "replay" in d else []
    table = out.table(headers, rows, right={1, 2, 3, 4, 5, 6})
    return "\n".join([head, table, *replayed, *(f"  flag: {f}" for f in flags)])


def replay_text(r: dict) -> str:
    """A run replayed in the simulator, for a terminal: each mean simulated and its ratio to the file's,
    then how far the simulator has been measured to miss with that engine (or why it could not run)."""
    if "error" in r:
        return f"  not simulated under the file's load: {r['error']}"
    names = {"ttft": "TTFT", "tpot": "TPOT", "request_latency": "request latency"}
    means = ", ".join(
        f"{name} {out.fmt_seconds(r['simulated'][k])}"
        + ("" if r["ratio"][k] is None else f" ({r['ratio'][k]:.2f}× measured)")
        for k, name in names.items()
    )
    lines = [f"  simulated under the file's load ({r['load']}; {r['requests']:,} requests on {r['engine']}):",
             f"    {means}"]  # fmt: skip
    band = r["error_band"]
    if band["validated"]:
        errors = ", ".join(f"{name} {band_value(band[f'{k}_median_abs_error'])}" for k, name in
                           (("ttft", "TTFT"), ("tpot", "TPOT"), ("request", "request latency")))  # fmt: skip
        lines.append(f"    the simulator's validated error with {r['engine']}: {errors}")
    return "\n".join(lines)


def diagnose_text(result: dict) -> str:
    """``diagnose --from`` for a terminal."""
    lines = [f"diagnose --from {result['from']} ({TOOL_NAMES[result['tool']]}, {len(result['runs'])} run(s))"]
    return "\n\n".join(["\n".join(lines), *(run_text(d) for d in result["runs"])])
