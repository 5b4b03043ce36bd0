"""Every number the course shows, captured so that a refactor can be checked against it.

Two kinds of output are captured: the command line's JSON and text for a fixed set of configurations (all
commands, all engines, ideal and achievable), and the text the notebooks store (stdout, ``text/plain`` and
``text/html`` of every cell). Run it before a change and after, and compare:

    uv run python tools/compare_outputs.py --write /tmp/before.json
    ... change the library, refresh the notebooks ...
    uv run python tools/compare_outputs.py --against /tmp/before.json

``--against`` prints each output that differs and exits 1 if any does. The snapshot is not committed:
the project's tests take their golden values from the physics, not from a previous implementation.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODELS = ("llama-3-8b", "llama-3-70b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b",
          "llama-2-7b", "mistral-7b", "qwen2.5-7b", "llama-3.2-1b")  # fmt: skip
GPUS = ("h100-sxm", "a100-80gb-sxm", "h200", "b200", "l40s", "rtx-4090", "mi300x", "m4-max", "a10g", "l4")
ENGINES = ("ideal", "vllm", "tensorrt-llm", "sglang", "llama.cpp", "deepspeed-mii", "splitwise-2023",
           "vllm-2024", "tensorrt-llm-2024")  # fmt: skip
# Enough GPUs of an H100's size for the model's release weights.
SPLIT = {
    "llama-3-70b": "--gpus 2",
    "mixtral-8x7b": "--gpus 2",
    "deepseek-v3": "--gpus 8",
    "gpt-oss-120b": "--gpus 2",
}
FIXED = """
step --model llama-3-8b --gpu h100-sxm --batch 32 --launch-overhead-ms 1.2
step --model llama-3-8b --gpu h100-sxm --batch 32 --context 1000
step --model llama-3-70b --gpu h100-pcie --gpus 2 --batch 8
step --model llama-3-8b --gpu h100
step --model llama-3-8b --gpu a100-80gb-sxm --weights fp8 --json
prefill --model llama-3-8b --gpu h100-sxm --prompt 8000
prefill --model llama-3-8b --gpu h100-sxm --prompt 8000 --no-attention
prefill --model llama-3-8b --gpu h100-sxm --prompt 500 --decode-context 1000
fit --model llama-3-8b --gpu h100-sxm --context 4096 --batch 64
fit --model llama-3-8b --gpu h100-sxm --context 4096 --memory ideal --json
cost --model llama-3-8b --gpu h100-sxm --batch 64 --context 4096 --usd-per-hour 3
cost --tokens-per-s 2000 --usd-per-hour 3 --json
cost --model llama-3-8b --gpu h100-sxm --price runpod-h200-secure --json
list gpus
list models
list prices
list engines
list gpus --json
list models --json
list prices --json
list engines --json
serve --model llama-3-8b --gpu h100-sxm --rate 40 --input 512 --output 128 --requests 300
serve --model llama-3-8b --gpu h100-sxm --concurrency 16 --requests 200 --input 1000 --output 100 --json
serve --model llama-3-8b --gpu h100-sxm --rate 30 --requests 200 --input 512 --output 64 --chunk 512 --priority prefill-first --json
serve --model llama-3-8b --gpu h100-sxm --rate 30 --requests 200 --replicas 2 --slo-ttft-ms 500 --slo-tpot-ms 50 --json --input 512 --output 64
serve --model llama-3-70b --gpu h100-sxm --gpus 2 --rate 5 --requests 100 --pipeline-stages 2 --json --input 512 --output 64
serve --model llama-3-8b --gpu h100-sxm --rate 20 --requests 200 --prefill-workers 1 --decode-workers 2 --json --input 512 --output 64
serve --model llama-3-8b --gpu h100-sxm --rate 20 --requests 200 --prefix-hit-rate 0.5 --kv-capacity-tokens 50000 --json --input 512 --output 64
serve --model llama-3-8b --gpu h100-sxm --rate 400 --requests 300 --json --input 512 --output 64
serve --model mixtral-8x7b --gpu h100-sxm --gpus 2 --rate 10 --requests 100 --engine sglang --json --input 512 --output 64
plan --model llama-3-70b --gpu h100-sxm --gpus 4 --rate 20 --requests 200 --slo-ttft-ms 1000 --input 512 --output 64
plan --model llama-3-8b --gpu l40s --rate 30 --requests 200 --json --input 512 --output 64
plan --model llama-3-8b --gpu h100-sxm --rate 50 --requests 200 --engine tensorrt-llm --slo-tpot-ms 30 --json --input 512 --output 64
generate --model llama-3-8b --gpu h100-sxm --batch 16 --input 512 --output 256
generate --model llama-3-8b --gpu rtx-4090 --engine llama.cpp --batch 1 --input 128 --output 128 --json
generate --model llama-3-70b --gpu rtx-4090 --gpus 4 --weights gguf-q4_0 --engine llama.cpp --parallel pipeline --batch 1 --input 128 --output 128 --json
generate --model deepseek-v3 --gpu h200 --gpus 8 --engine sglang --batch 32 --input 1000 --output 200 --json
speculate --model llama-3-8b --gpu h100-sxm --draft llama-3.2-1b --draft-tokens 4 --acceptance 0.8 --batch 8
speculate --model deepseek-v3 --gpu h200 --gpus 8 --draft-tokens 1 --acceptance 0.85 --json
diagnose --model llama-3-8b --gpu a10g --tokens-per-s 90
diagnose --model llama-3-8b --gpu h100-sxm --tpot-ms 7 --batch 8 --json
diagnose --model llama-3-8b --gpu h100-sxm --ttft-ms 40 --prompt 1000 --json
diagnose --model llama-3-8b --gpu h100-sxm --tokens-per-s 400 --json
calibrate --name my-vllm --model llama-3-8b --gpu h100-sxm --point tpot=7.0,batch=1,context=1000 --point tpot=9.5,batch=32,context=1000 --dry-run --json
step --model llama-3-8b --gpu h100-sxm --batch 0 --json
step --model llama-3-8bb --gpu h100-sxm --json
step --model llama-3-70b --gpu h100-sxm --json
step --model llama-3-8b --gpu h100-sxm --context 100000 --json
generate --model llama-3-8b --gpu h100-sxm --gpus 3 --batch 1 --input 8 --output 8 --json
step --model gpt-oss-120b --gpu b200 --weights mxfp4 --batch 64 --json
"""  # noqa: E501


def configurations() -> list[list[str]]:
    """The command lines compared: every command, every engine, a spread of models, GPUs and loads."""
    runs = []
    for model in MODELS:
        gpu, split = ("h200" if model == "deepseek-v3" else "h100-sxm"), SPLIT.get(model, "")
        for batch, context in ((1, 1000), (32, 1000), (256, 4096)):
            runs.append(
                f"step --model {model} --gpu {gpu} {split} --batch {batch} --context {context} --json"
            )
        runs.append(f"prefill --model {model} --gpu h100-sxm {split} --prompt 2000 --json")
        runs.append(f"fit --model {model} --gpu h100-sxm --context 4096 --json")
    for gpu in GPUS:
        weights = "--weights fp16" if gpu == "m4-max" else ""
        runs.append(f"step --model llama-3-8b --gpu {gpu} --batch 8 {weights} --json")
        runs.append(f"prefill --model llama-3-8b --gpu {gpu} --prompt 1000 {weights} --json")
        runs.append(f"cost --model llama-3-8b --gpu {gpu} --batch 16 {weights} --json")
        runs.append(f"fit --model llama-3-70b --gpu {gpu} --context 8000 --batch 4 --json")
    for engine in ENGINES:
        for gpu in ("h100-sxm", "a100-80gb-sxm"):
            base = f"--model llama-3-8b --gpu {gpu} --engine {engine} --json"
            runs += [f"step {base} --batch 1", f"step {base} --batch 64 --context 2000",
                     f"prefill {base} --prompt 4000", f"cost {base} --batch 32",
                     f"generate {base} --batch 16 --input 512 --output 128",
                     f"speculate {base} --draft-cost-ratio 0.05 --draft-tokens 4 --acceptance 0.7",
                     f"diagnose {base} --tokens-per-s 120"]  # fmt: skip
        runs.append(f"serve --model llama-3-8b --gpu h100-sxm --engine {engine} --rate 20 --requests 200 "
                    "--input 512 --output 64 --json")  # fmt: skip
        runs.append(f"generate --model llama-3-70b --gpu h100-sxm --gpus 4 --engine {engine} --batch 8 "
                    "--input 1000 --output 200 --json")  # fmt: skip
    for precision in ("fp8", "int4", "awq-int4", "fp8-block128", "mxfp4", "gguf-q4_0"):
        runs.append(f"step --model llama-3-8b --gpu h100-sxm --weights {precision} --batch 16 --json")
        runs.append(f"step --model llama-3-8b --gpu h100-sxm --weights {precision} --kv fp8 --batch 16")
    for gpus in ("1", "2", "4", "8"):
        runs.append(
            f"step --model llama-3-70b --gpu h100-sxm --gpus {gpus} --weights fp8 --batch 8 --comm --json"
        )
        runs.append(f"generate --model llama-3-8b --gpu a100-80gb-sxm --gpus {gpus} --batch 4 --input 256 "
                    "--output 64 --json")  # fmt: skip
    runs += FIXED.strip().splitlines()
    return [shlex.split(r) for r in runs]


def run_cli(argv: list[str]) -> dict:
    """Exit code, stdout and stderr of ``roofline ARGV``, run in this process."""
    from roofline.apps.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def saved_calibration_outputs() -> dict:
    """A calibration saved under a name, then used by other commands (in a fresh process and user folder)."""
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        "from compare_outputs import run_cli\n"
        "runs = [\n"
        "  ['calibrate', '--name', 'my-vllm', '--model', 'llama-3-8b', '--gpu', 'h100-sxm', '--point',\n"
        "   'tpot=7.0,batch=1,context=1000', '--point', 'tpot=9.5,batch=32,context=1000', '--json'],\n"
        "  ['step', '--model', 'llama-3-8b', '--gpu', 'h100-sxm', '--engine', 'my-vllm', '--batch', '8',\n"
        "   '--json'],\n"
        "  ['list', 'engines', '--json'],\n"
        "]\n"
        "print(json.dumps({' '.join(r): run_cli(r) for r in runs}))\n"
    )
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "SPEED_PHYSICS_HOME": home}
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
    outputs = json.loads(done.stdout)
    for value in outputs.values():  # the user folder's path differs per run
        for key in ("stdout", "stderr"):
            value[key] = value[key].replace(home, "<home>")
    return outputs


def notebook_outputs() -> dict:
    """Each notebook's stored text outputs, cell by cell (images are left out: their bytes vary)."""
    texts = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        outputs = []
        for cell in cells:
            for o in cell.get("outputs", []):
                if o.get("output_type") == "stream":
                    outputs.append("".join(o["text"]))
                for kind in ("text/plain", "text/html"):
                    if kind in o.get("data", {}):
                        outputs.append("".join(o["data"][kind]))
        texts[path.name] = outputs
    return texts


def capture() -> dict:
    with tempfile.TemporaryDirectory() as home:
        os.environ["SPEED_PHYSICS_HOME"] = home  # no user rows or calibrations of the machine's own
        cli = {" ".join(argv): run_cli(argv) for argv in configurations()}
    cli.update(saved_calibration_outputs())
    return {"cli": cli, "notebooks": notebook_outputs()}


def compare(before: dict, after: dict) -> list[str]:
    """One line per output that differs."""
    diffs = []
    for kind in ("cli", "notebooks"):
        for key in sorted(set(before[kind]) | set(after[kind])):
            a, b = before[kind].get(key), after[kind].get(key)
            if a != b:
                diffs.append(
                    f"{kind}: {key}\n  before: {json.dumps(a)[:600]}\n  after:  {json.dumps(b)[:600]}"
                )
    return diffs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="capture every output into this file")
    group.add_argument("--against", type=Path, help="capture again and compare with this file")
    args = parser.parse_args()
    now = capture()
    if args.write:
        args.write.write_text(json.dumps(now, indent=1, sort_keys=True))
        print(
            f"{len(now['cli'])} command lines and {len(now['notebooks'])} notebooks written to {args.write}"
        )
        return 0
    diffs = compare(json.loads(args.against.read_text()), now)
    print("\n".join(diffs) or "no differences")
    print(
        f"{len(now['cli'])} command lines and {len(now['notebooks'])} notebooks compared: {len(diffs)} differ"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
