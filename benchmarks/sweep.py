"""How much the vectorized library buys: one million decode-step configurations, two ways.

    cd /work/main && uv run python benchmarks/sweep.py            # about 20 s on a 2-core machine
    uv run python benchmarks/sweep.py --quick                     # smaller loop subsets, a few seconds
    uv run python benchmarks/sweep.py --profile                   # also time decode_step line by line
    uv run python benchmarks/sweep.py --smoke                     # tiny subsets: that it runs (CI)

The grid is 100 batch sizes × 2,500 context lengths × 4 GPU counts = 1,000,000 configurations of one
model on one GPU type. Three ways of evaluating it are timed in the same run:

1. vectorized: ONE call of ``rl.decode_step(..., on_overflow="mask")`` on broadcasting arrays of shape
   (100, 1, 1), (1, 2500, 1) and (1, 1, 4). Median of several repeats after a warm-up call.
2. plain-Python arithmetic loop: the step-time formula written out with Python floats, one configuration
   per iteration, over all 1,000,000 configurations (measured, not extrapolated). The per-model constants
   (bytes per weight, KV bytes per token, peak FLOP/s, ...) come from the library and are hoisted out of
   the loop. This is the fastest a plain loop gets.
3. library scalar loop: ``rl.decode_step`` called once per configuration with Python scalars, on a random
   subset (default 20,000), then EXTRAPOLATED linearly to 1,000,000 configurations. This is what a
   notebook that loops over the library would cost.

Both loops are checked against the vectorized result on the configurations they evaluated: same NaN
pattern (does not fit), and step time, tokens/s, bytes and FLOPs equal to a relative 1e-12.

If the vectorized call is slower than the target (0.1 s), or with ``--profile``, the script also times
every line of ``decode_step`` during one vectorized call (a line tracer; the time of a function called on a
line is counted on that line) and prints the costly ones.
"""

from __future__ import annotations

import argparse
import inspect
import linecache
import math
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

import roofline as rl
from roofline.physics.parallel import kv_replicas

TARGET_S = 0.1
GPU_COUNTS = (1, 2, 4, 8)
N_BATCH, N_CONTEXT = 100, 2_500


def build_grid(max_context: int):
    """Broadcastable axes: batch (100, 1, 1), context (1, 2500, 1), GPUs (1, 1, 4)."""
    batch = np.arange(1, N_BATCH + 1, dtype=float).reshape(-1, 1, 1)
    context = np.round(np.linspace(0, max_context, N_CONTEXT)).reshape(1, -1, 1)
    gpus = np.array(GPU_COUNTS, dtype=float).reshape(1, 1, -1)
    assert len(np.unique(context)) == N_CONTEXT, "context values must be distinct"
    return batch, context, gpus


def vectorized(model, gpu, batch, context, gpus, precision):
    return rl.decode_step(
        model,
        gpu,
        batch,
        context,
        num_gpus=gpus,
        weight_precision=precision,
        kv_precision=precision,
        on_overflow="mask",
    )


def time_vectorized(model, gpu, batch, context, gpus, precision, repeats):
    vectorized(model, gpu, batch, context, gpus, precision)  # warm-up: page faults, caches, imports
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = vectorized(model, gpu, batch, context, gpus, precision)
        times.append(time.perf_counter() - t0)
    return result, times


def plain_loop(model, gpu, batch_values, context_values, gpu_values, precision):
    """Every configuration with Python floats; returns (step time, tokens/s total) lists in C order."""
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    # Per-model and per-GPU constants, from the library, computed once.
    weight_bytes_read = {b: float(rl.weight_bytes_read(m, precision, b)) for b in batch_values}  # MoE: ~B
    weight_bytes = rl.weight_bytes(m, precision)
    kv_per_token = rl.kv_bytes_per_token(m, precision)
    flops_per_token = 2.0 * rl.active_parameter_count(m)
    attention_per_context_token = rl.attention_flops_per_token(m, 1)
    bandwidth = g.memory_bandwidth_bytes_per_s
    peak = rl.peak_flops_per_s(g, precision)
    # What an engine leaves for weights and KV on n GPUs (decode_step's memory="engine"), and the KV
    # copies tensor parallelism keeps (a KV head is never split)
    have = {n: float(rl.memory_available_bytes(g, n)) for n in gpu_values}
    kv_copies = {n: float(kv_replicas(m, n)) for n in gpu_values}
    nan = math.nan

    step_out, rate_out = [], []
    step_append, rate_append = step_out.append, rate_out.append
    for b in batch_values:
        w = weight_bytes_read[b]
        for t in context_values:
            kv = b * t * kv_per_token
            total_bytes = w + kv
            flops = b * (flops_per_token + attention_per_context_token * t)
            for n in gpu_values:
                if weight_bytes + kv * kv_copies[n] <= have[n]:  # fits in what the engine leaves
                    mem_t = total_bytes / (n * bandwidth)
                    comp_t = flops / (n * peak)
                    step = mem_t if mem_t >= comp_t else comp_t
                    step_append(step)
                    rate_append(b / step)
                else:
                    step_append(nan)
                    rate_append(nan)
    return step_out, rate_out


def library_loop(model, gpu, configs, precision):
    """``rl.decode_step`` once per configuration, with Python scalars."""
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    out = []
    for b, t, n in configs:
        s = rl.decode_step(
            m, g, b, t, num_gpus=n, weight_precision=precision, kv_precision=precision, on_overflow="mask"
        )
        out.append((s.step_time_s, s.tokens_per_s_total, s.bytes_read, s.flops))
    return np.array(out)


def same(a, b, rtol=1e-12):
    """Equal within rtol, NaN where the other is NaN."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(
        np.array_equal(np.isnan(a), np.isnan(b)) and np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True)
    )


def line_profile(func, *args, repeats=3, **kwargs):
    """Seconds per call spent on each line of ``func`` (callees counted on the calling line)."""
    code = func.__code__
    totals: dict[int, float] = defaultdict(float)
    state = {"line": None, "t": 0.0}

    def local(frame, event, arg):
        now = time.perf_counter()
        if state["line"] is not None:
            totals[state["line"]] += now - state["t"]
        state["line"] = frame.f_lineno if event == "line" else None
        state["t"] = time.perf_counter()
        return local

    def global_(frame, event, arg):
        return local if frame.f_code is code else None

    func(*args, **kwargs)  # warm-up
    wall = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sys.settrace(global_)
        try:
            func(*args, **kwargs)
        finally:
            sys.settrace(None)
        wall.append(time.perf_counter() - t0)
    filename = inspect.getsourcefile(func)
    rows = sorted(
        ((t / repeats, line, linecache.getline(filename, line).strip()) for line, t in totals.items()),
        reverse=True,
    )
    return rows, statistics.median(wall), filename


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3-8b")
    parser.add_argument("--gpu", default="h100-sxm")
    parser.add_argument("--precision", default="bf16", help="weights and KV cache")
    parser.add_argument("--max-context", type=int, default=8192, help="largest context in the grid (tokens)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats of the vectorized call")
    parser.add_argument(
        "--library-subset",
        type=int,
        default=20_000,
        help="configurations for the rl.decode_step loop (extrapolated to 1e6)",
    )
    parser.add_argument(
        "--plain-subset",
        type=int,
        default=0,
        help="configurations for the plain-arithmetic loop; 0 = all 1e6, no extrapolation",
    )
    parser.add_argument(
        "--quick", action="store_true", help="2,000-config library loop, 100,000-config plain loop"
    )
    parser.add_argument("--profile", action="store_true", help="time decode_step line by line")
    parser.add_argument("--smoke", action="store_true", help="tiny loop subsets, one repeat: seconds (CI)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:
        args.library_subset, args.plain_subset = 2_000, 100_000
    if args.smoke:
        args.library_subset, args.plain_subset, args.repeats = 200, 10_000, 1

    batch, context, gpus = build_grid(args.max_context)
    shape = (batch.size, context.size, gpus.size)
    total = math.prod(shape)
    print(
        f"grid: {batch.size} batch sizes (1-{N_BATCH}) × {context.size} contexts "
        f"(0-{args.max_context:,} tokens) × "
        f"GPU counts {list(GPU_COUNTS)} = {total:,} configurations of {args.model} on {args.gpu}, "
        f"{args.precision}"
    )
    print(f"numpy {np.__version__}, Python {sys.version.split()[0]}")

    # 1. vectorized ----------------------------------------------------------------------------------
    s, times = time_vectorized(args.model, args.gpu, batch, context, gpus, args.precision, args.repeats)
    assert s.step_time_s.shape == shape
    vec_s = statistics.median(times)
    masked = int(np.count_nonzero(~s.fits))
    print(
        f"\n1. vectorized, one decode_step call: median {vec_s * 1e3:.1f} ms of {args.repeats} "
        f"(min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f} ms); "
        f"{masked:,} configurations do not fit (NaN)"
    )

    # 2. plain arithmetic loop -----------------------------------------------------------------------
    rng = np.random.default_rng(args.seed)
    b_vals = [float(x) for x in batch.ravel()]
    t_vals = [float(x) for x in context.ravel()]
    n_vals = [float(x) for x in gpus.ravel()]
    if args.plain_subset and args.plain_subset < total:
        # a random subset of whole batch rows keeps the loop shape; extrapolate by configuration count
        rows = max(1, round(args.plain_subset / (context.size * gpus.size)))
        pick = np.sort(rng.choice(batch.size, size=rows, replace=False))
        b_loop = [b_vals[i] for i in pick]
    else:
        pick, b_loop = np.arange(batch.size), b_vals
    n_plain = len(b_loop) * context.size * gpus.size
    t0 = time.perf_counter()
    step_plain, rate_plain = plain_loop(args.model, args.gpu, b_loop, t_vals, n_vals, args.precision)
    plain_s = time.perf_counter() - t0
    plain_1e6 = plain_s * total / n_plain
    ok_plain = same(np.reshape(step_plain, (len(b_loop), *shape[1:])), s.step_time_s[pick]) and same(
        np.reshape(rate_plain, (len(b_loop), *shape[1:])), s.tokens_per_s_total[pick]
    )
    if n_plain == total:
        how = "all of them, measured, not extrapolated"
    else:
        how = f"→ {plain_1e6:.2f} s for 1,000,000, EXTRAPOLATED linearly"
    print(
        f"2. plain-Python arithmetic loop: {plain_s:.2f} s for {n_plain:,} configurations "
        f"({plain_s / n_plain * 1e6:.2f} µs each; {how}); agrees with vectorized: {ok_plain}"
    )

    # 3. library scalar loop -------------------------------------------------------------------------
    flat = rng.choice(total, size=min(args.library_subset, total), replace=False)
    idx = np.unravel_index(flat, shape)
    configs = list(
        zip(
            batch.ravel()[idx[0]].tolist(),
            context.ravel()[idx[1]].tolist(),
            gpus.ravel()[idx[2]].tolist(),
            strict=True,
        )
    )
    t0 = time.perf_counter()
    lib = library_loop(args.model, args.gpu, configs, args.precision)
    lib_s = time.perf_counter() - t0
    lib_1e6 = lib_s * total / len(configs)
    ok_lib = all(
        same(lib[:, k], getattr(s, f)[idx])
        for k, f in enumerate(("step_time_s", "tokens_per_s_total", "bytes_read", "flops"))
    )
    print(
        f"3. rl.decode_step called in a loop: {lib_s:.2f} s for a random {len(configs):,} configurations "
        f"({lib_s / len(configs) * 1e6:.0f} µs each) → {lib_1e6:.0f} s for 1,000,000 "
        f"(EXTRAPOLATED linearly); agrees with vectorized: {ok_lib}"
    )

    print(
        f"\nspeed-up of the vectorized call: {plain_1e6 / vec_s:,.0f}× over the plain arithmetic loop, "
        f"{lib_1e6 / vec_s:,.0f}× over looping rl.decode_step"
    )
    verdict = "met" if vec_s < TARGET_S else "MISSED"
    print(f"target: vectorized 1e6 sweep under {TARGET_S:g} s: {verdict} ({vec_s * 1e3:.1f} ms)")

    if args.profile or vec_s >= TARGET_S:
        rows, wall, filename = line_profile(
            rl.decode_step,
            args.model,
            args.gpu,
            batch,
            context,
            num_gpus=gpus,
            weight_precision=args.precision,
            kv_precision=args.precision,
            on_overflow="mask",
        )
        print(
            f"\nline profile of decode_step ({filename}), 1e6 configurations, per call; "
            f"traced wall time {wall * 1e3:.1f} ms, lines ≥ 1 ms:"
        )
        for seconds, line, text in rows:
            if seconds >= 1e-3:
                print(f"  {seconds * 1e3:6.1f} ms  {100 * seconds / wall:4.0f}%  line {line:<4} {text[:80]}")
    return 0 if ok_plain and ok_lib else 1


if __name__ == "__main__":
    raise SystemExit(main())
