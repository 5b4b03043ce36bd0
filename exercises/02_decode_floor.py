# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""The decode floor and the speed ceiling at batch 1, and how far a measurement sits from them.

Speed Physics, lesson 02 (exercise). The library's version is ``roofline.decode_floor_s``.

With a single user, each decode step makes one token and has to stream every weight out of GPU memory
once. Nothing can make that step quicker than the time the memory needs to deliver those bytes:

    weight bytes  = parameters x bytes per weight
    bandwidth     = G x bandwidth of one GPU        (tensor parallel: each GPU reads its own slice at once)
    floor (s)     = weight bytes / bandwidth
    ceiling       = 1 / floor                       (tokens/s for that one user)
    MBU           = floor / measured step time      (share of peak bandwidth the real kernels reach)

Units: bytes, bytes/s, seconds. Bytes per weight: fp32 4, bf16 and fp16 2, fp8 and int8 1, int4
0.5 + 2/128 (a 2-byte scale for every 128 weights), fp4 0.5 + 1/16. The card's cases: an 8B model in
BF16 on one H100 (3.35 TB/s) cannot beat 16 GB / 3.35 TB/s, about 4.8 ms or 200 tokens/s; a 70B model
in FP8 on two H100s has 6.7 TB/s to read 70 GB, so its floor is about 10.4 ms, and a measured 14 ms is
about 74 % MBU. A measurement faster than the floor means the benchmark, not the GPU, is broken.

Run it:

    uv run exercises/02_decode_floor.py                          # the card: 70e9, fp8, 2 x 3.35 TB/s, 14 ms
    uv run exercises/02_decode_floor.py 8.03e9 --precision bf16 --gpus 1
    uv run exercises/02_decode_floor.py --params 8e9 --precision int4 --measured-ms 4
    uv run exercises/02_decode_floor.py --check                  # compare the functions with the card

>>> round(decode_floor_s(weight_bytes(70e9, 1.0), total_bandwidth_bytes_per_s(3.35e12, 2)) * 1e3, 1)
10.4
>>> bytes_per_weight("int4")
0.515625
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

TB = 1e12
GB = 1e9

# Bytes one stored weight takes, scale overhead included.
BYTES_PER_WEIGHT = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 4 / 8 + 2 / 128,  # 4 bits, plus one 16-bit scale shared by each group of 128 weights
    "fp4": 4 / 8 + 1 / 16,  # 4 bits, plus one 8-bit scale shared by each group of 16 values
}

# The functions a learner writes in exercises/starters/02_decode_floor.py.
PHYSICS = (
    "weight_bytes",
    "total_bandwidth_bytes_per_s",
    "decode_floor_s",
    "decode_ceiling_tokens_per_s",
    "mbu",
)

# (function, arguments, expected, source): the card's figures, worked out by hand.
CHECKS = [
    ("weight_bytes", (70e9, 1.0), 70e9, "70B parameters at 1 byte each (FP8)"),
    ("weight_bytes", (8e9, 2.0), 16e9, "the card: 8B in BF16 is 16 GB"),
    ("total_bandwidth_bytes_per_s", (3.35e12, 2), 6.7e12, "the card: two H100s, bandwidths add"),
    ("decode_floor_s", (16e9, 3.35e12), 4.78e-3, "the card: 16 GB / 3.35 TB/s, about 4.8 ms"),
    ("decode_floor_s", (70e9, 6.7e12), 10.4e-3, "the card: 70 GB / 6.7 TB/s, about 10.4 ms"),
    ("decode_ceiling_tokens_per_s", (4.78e-3,), 209.0, "the card: 1 / 4.8 ms, about 200 tokens/s"),
    ("mbu", (10.45e-3, 14e-3), 0.746, "the card: 10.4 / 14, about 74 %"),
]


def bytes_per_weight(precision) -> float:
    """Bytes per stored weight for a precision name (``"fp8"``) or a plain number of bytes (``"1.5"``)."""
    key = str(precision).strip().lower()
    if key in BYTES_PER_WEIGHT:
        return BYTES_PER_WEIGHT[key]
    try:
        value = float(key)
    except ValueError:
        raise ValueError(
            f"unknown precision {precision!r}: use one of {', '.join(BYTES_PER_WEIGHT)} or a number of bytes"
        ) from None
    if not 0 < value < float("inf"):
        raise ValueError(f"bytes per weight must be a positive number, got {precision!r}")
    return value


def weight_bytes(parameters, bytes_per_weight_) -> float:
    """Bytes of all the weights (bytes): parameters x bytes per weight."""
    return parameters * bytes_per_weight_


def total_bandwidth_bytes_per_s(bandwidth_per_gpu_bytes_per_s, num_gpus=1) -> float:
    """Memory bandwidth of ``num_gpus`` GPUs reading their slices of the weights at once (bytes/s)."""
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be at least 1, got {num_gpus!r}")
    return bandwidth_per_gpu_bytes_per_s * num_gpus


def decode_floor_s(weight_bytes_, bandwidth_bytes_per_s) -> float:
    """Shortest possible batch-1 decode step (s): every weight byte read once, at full bandwidth."""
    if not bandwidth_bytes_per_s > 0:
        raise ValueError(f"bandwidth must be above 0 bytes/s, got {bandwidth_bytes_per_s!r}")
    return weight_bytes_ / bandwidth_bytes_per_s


def decode_ceiling_tokens_per_s(floor_s) -> float:
    """Highest possible speed for one user (tokens/s): one token per step, at best one step per floor."""
    return 1.0 / floor_s


def mbu(floor_s, measured_step_s) -> float:
    """Memory-bandwidth utilization (fraction): the floor divided by the measured step time."""
    if not measured_step_s > 0:
        raise ValueError(f"the measured step time must be above 0 s, got {measured_step_s!r}")
    return floor_s / measured_step_s


# --- command line -------------------------------------------------------------------------------------

CARD = {"params": 70e9, "precision": "fp8", "bandwidth_tb_s": 3.35, "gpus": 2}
CARD_MEASURED_MS = 14.0


def _number(text: str, *, above=None, minimum=None, integer=False):
    """Parse ``8.03e9``, ``70e9``, ``8B`` (billions) or ``250M`` (millions), with bounds."""
    raw = text.strip().replace("_", "")
    scale = 1.0
    if not integer and raw[-1:].lower() in ("b", "m"):
        scale = 1e9 if raw[-1].lower() == "b" else 1e6
        raw = raw[:-1]
    try:
        value = int(raw) if integer else float(raw) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if above is not None and not value > above:
        raise argparse.ArgumentTypeError(f"must be above {above:g}, got {text!r}")
    if minimum is not None and not value >= minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text!r}")
    return value


def _precision(text: str) -> str:
    try:
        bytes_per_weight(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip().lower()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Decode floor (ms per token) and ceiling (tokens/s) at batch 1, and MBU.",
    )
    positive = lambda t: _number(t, above=0)  # noqa: E731
    parser.add_argument(
        "params_positional",
        nargs="?",
        type=positive,
        metavar="PARAMS",
        help="parameter count, e.g. 8.03e9 or 70B (default: the card's 70e9)",
    )
    parser.add_argument("--params", type=positive, help="the same, as an option")
    parser.add_argument(
        "--precision",
        type=_precision,
        default=CARD["precision"],
        help=f"bytes per weight: {', '.join(BYTES_PER_WEIGHT)} or a number (default: fp8)",
    )
    parser.add_argument(
        "--bandwidth-tb-s",
        type=positive,
        default=CARD["bandwidth_tb_s"],
        metavar="TB_S",
        help="memory bandwidth of ONE GPU, TB/s (default: 3.35, an H100 SXM)",
    )
    parser.add_argument(
        "--gpus",
        type=lambda t: _number(t, minimum=1, integer=True),
        default=CARD["gpus"],
        help="GPUs in tensor parallel; their bandwidths add (default: 2)",
    )
    parser.add_argument(
        "--measured-ms",
        type=positive,
        metavar="MS",
        help="your measured time per output token, ms. With the card's model and hardware "
        "the card's 14 ms is used unless you give one",
    )
    parser.add_argument("--check", action="store_true", help="check the functions against the card and exit")
    return parser


def _sig(x: float) -> str:
    """Three significant digits, without switching to e-notation for large values."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check:
        return _self_check()
    if (
        args.params is not None
        and args.params_positional is not None
        and args.params != args.params_positional
    ):
        parser.error("give the parameter count once, either as PARAMS or as --params")
    params = args.params or args.params_positional or CARD["params"]
    measured_ms = args.measured_ms
    chosen = {
        "params": params,
        "precision": args.precision,
        "bandwidth_tb_s": args.bandwidth_tb_s,
        "gpus": args.gpus,
    }
    card_measurement = measured_ms is None and chosen == CARD
    if card_measurement:
        measured_ms = CARD_MEASURED_MS

    b = bytes_per_weight(args.precision)
    weights = weight_bytes(params, b)
    bandwidth = total_bandwidth_bytes_per_s(args.bandwidth_tb_s * TB, args.gpus)
    floor = decode_floor_s(weights, bandwidth)
    gpus = "GPU" if args.gpus == 1 else "GPUs in tensor parallel, bandwidths add"
    unit = "byte" if b == 1 else "bytes"
    print(
        f"Weights:    {_sig(params / 1e9)} billion parameters × {b:g} {unit} ({args.precision}) = "
        f"{_sig(weights / GB)} GB"
    )
    print(
        f"Bandwidth:  {args.gpus} × {args.bandwidth_tb_s:g} TB/s = {bandwidth / TB:.2f} TB/s "
        f"({args.gpus} {gpus})"
    )
    print(
        f"Floor:      {_sig(weights / GB)} GB ÷ {bandwidth / TB:.2f} TB/s = {_sig(floor * 1e3)} ms per token "
        "at batch 1"
    )
    ceiling = decode_ceiling_tokens_per_s(floor)
    shown = f"{ceiling:,.0f}" if ceiling >= 100 else f"{ceiling:.3g}"
    print(f"Ceiling:    1 ÷ {_sig(floor * 1e3)} ms = {shown} tokens/s for one user")
    if measured_ms is not None:
        measured = measured_ms / 1e3
        source = " (the card's measurement; pass --measured-ms for yours)" if card_measurement else ""
        print(f"\nMeasured:   {measured_ms:g} ms per token{source}")
        print(
            f"  achieved bandwidth {_sig(weights / GB)} GB ÷ {measured_ms:g} ms = "
            f"{weights / measured / TB:.2f} TB/s"
        )
        ratio = mbu(floor, measured)
        print(f"  MBU = floor ÷ measured = {_sig(floor * 1e3)} ÷ {measured_ms:g} = {ratio:.1%}")
        if measured < floor:
            print(
                "  Faster than the floor, which no kernel can be: suspect the benchmark (timer stopped "
                "without a GPU synchronize? prompt tokens counted as output?)"
            )
    return 0


def _self_check() -> int:
    # Load the shared checker by path: these scripts run standalone (PEP 723), outside any package.
    spec = importlib.util.spec_from_file_location("_selfcheck", Path(__file__).with_name("_selfcheck.py"))
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return 0 if checker.run_checks(globals(), CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
