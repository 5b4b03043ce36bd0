"""Microbenchmarks of this machine's roofline with numpy: memory bandwidth, matmul FLOP/s, ridge, overhead.

Taught in notebooks/measure_your_machine.ipynb (and used by ``roofline measure``).

The same physics governs a laptop's CPU as a GPU: streaming kernels are limited by memory bandwidth
(bytes/s), large matrix multiplies by the arithmetic units (FLOP/s). Every figure is *measured* on a machine
shared with whatever else runs on it, so each benchmark repeats and reports the best pass and the median.

Byte counting follows STREAM (McCalpin): copy ``c = a`` counts 2 arrays × 8 bytes per element, triad
``a = b + s·c`` counts 3. The hardware may move more (a write first reads its cache line, "write
allocate"), so STREAM figures slightly *under*-estimate the traffic; they are the usual way to quote
bandwidth. numpy evaluates ``b + s*c`` in two passes with a temporary, which would move 5 arrays, so the
triad here runs in cache-sized blocks: the temporary stays in L1/L2 and main memory sees the 3 arrays.

A third kernel, read (a matrix-vector product: 1 array read, nothing written), is the access pattern of
decode, which only *reads* its weights. numpy runs copy and triad on ONE core (ufuncs are single-threaded);
the read kernel goes through the BLAS, which uses every core, as the transformer's matmuls do. The headline
bandwidth is the best of the three.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from roofline.checks import checked, one_of
from roofline.data import GPU
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.results import Result

FLOAT64_BYTES = 8
TRIAD_SCALAR = 3.0
TRIAD_BLOCK_ELEMENTS = 16_384  # 128 KiB of float64 per block: the temporary stays in L2
MATMUL_DTYPES = {"fp32": np.float32, "fp64": np.float64}
QUICK = {"stream_elements": 16_000_000, "stream_repeats": 5, "matmul_sizes": (256, 512, 1024), "repeats": 5}
FULL = {"stream_elements": 64_000_000, "stream_repeats": 10, "matmul_sizes": (256, 512, 1024, 2048),
        "repeats": 7}  # fmt: skip


def whole_number(value, name: str, minimum: int = 1) -> int:
    """``value`` as an ``int`` once it is one whole number ≥ ``minimum``, else ``InvalidConfigurationError``.

    >>> whole_number(3, "repeats"), whole_number(0, "warmup", minimum=0)
    (3, 0)
    """
    return int(checked(value, name, minimum=minimum, whole=True, scalar=True))


@dataclass(frozen=True)
class Timing:
    """Repeated wall-clock timings (s) of one benchmark, with the work one pass does; best (fastest pass)
    and median rates."""

    name: str
    times_s: tuple[float, ...]
    bytes_per_pass: float = 0.0  # bytes, counted the STREAM way
    flops_per_pass: float = 0.0  # FLOP

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def best_bytes_per_s(self) -> float:
        return self.bytes_per_pass / self.min_s

    @property
    def median_bytes_per_s(self) -> float:
        return self.bytes_per_pass / self.median_s

    @property
    def best_flops_per_s(self) -> float:
        return self.flops_per_pass / self.min_s

    @property
    def median_flops_per_s(self) -> float:
        return self.flops_per_pass / self.median_s


@dataclass(frozen=True)
class Measurement(Result):
    """This machine's roofline, measured. SI units; ``details`` holds every underlying figure."""

    memory_bandwidth_bytes_per_s: float  # best streaming figure (read, copy or triad, the highest)
    matmul_flops_per_s: float  # best fp32 matmul over the sizes tried
    ridge_flop_per_byte: float  # matmul_flops_per_s ÷ memory_bandwidth_bytes_per_s
    call_overhead_s: float  # median time of one tiny numpy call
    matmul_fp64_flops_per_s: float
    threads: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)

    def as_gpu(self, gpu_id: str = "this-machine", memory_bytes: float | None = None) -> GPU:
        """This measurement as a ``roofline.GPU`` row of ``memory_bytes`` (default: this machine's RAM).
        Only fp32 and fp64 math is measured: ask the library for ``weight_precision="fp32"``.

        >>> Measurement(20e9, 100e9, 5.0, 1e-6, 50e9).as_gpu().dense_flops_per_s
        {'fp32': 100000000000.0, 'fp64': 50000000000.0}
        """
        return GPU(
            id=gpu_id,
            name=f"this machine ({machine_name()}), measured",
            vendor="measured",
            form_factor="CPU",
            memory_bytes=float(memory_bytes if memory_bytes is not None else ram_bytes()),
            memory_type="system RAM",
            memory_bandwidth_bytes_per_s=self.memory_bandwidth_bytes_per_s,
            dense_flops_per_s={"fp32": self.matmul_flops_per_s, "fp64": self.matmul_fp64_flops_per_s},
            interconnect="none",
            interconnect_bytes_per_s=0.0,
            power_w=0.0,
            source="measured on this machine by roofline measure",
            note="STREAM-style bandwidth and numpy matmul FLOP/s; see roofline.measure.bench",
        )


def time_round_robin(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 1) -> dict:
    """Wall-clock seconds (``time.perf_counter``) of ``repeats`` calls of each function after ``warmup``
    untimed ones, the functions taking turns: on a shared machine a disturbance then hits every benchmark
    alike instead of ruining all the passes of one of them.

    >>> sorted(time_round_robin({"a": lambda: None, "b": lambda: None}, repeats=2))
    ['a', 'b']
    """
    repeats, warmup = whole_number(repeats, "repeats"), whole_number(warmup, "warmup", minimum=0)
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: tuple(t) for name, t in times.items()}


def time_calls(fn: Callable[[], object], repeats: int, warmup: int = 1) -> tuple[float, ...]:
    """Wall-clock seconds of ``repeats`` calls of ``fn`` after ``warmup`` untimed calls (s).

    >>> len(time_calls(lambda: None, repeats=3))
    3
    """
    return time_round_robin({"fn": fn}, repeats, warmup)["fn"]


def stream_bandwidth(n_elements: int = QUICK["stream_elements"], repeats: int = 5) -> dict[str, Timing]:
    """STREAM copy and triad, and a read-only matrix-vector product, on float64 arrays of ``n_elements``,
    ``repeats`` times; bytes counted as STREAM does. Choose arrays much larger than the last-level cache
    (STREAM's rule: each array ≥ 4 × LLC) or the figure is cache bandwidth, not memory bandwidth.

    >>> r = stream_bandwidth(n_elements=200_000, repeats=2)
    >>> sorted(r), r["triad"].bytes_per_pass == 3 * 8 * 200_000
    (['copy', 'read', 'triad'], True)
    """
    n = whole_number(n_elements, "n_elements")
    a, b, c = np.full(n, 1.0), np.full(n, 2.0), np.full(n, 0.5)
    tmp = np.empty(min(TRIAD_BLOCK_ELEMENTS, n))
    a_matrix, x = a[: n - n % 512].reshape(-1, 512), np.ones(512)

    def triad():
        for start in range(0, n, TRIAD_BLOCK_ELEMENTS):
            stop = min(start + TRIAD_BLOCK_ELEMENTS, n)
            t = tmp[: stop - start]
            np.multiply(c[start:stop], TRIAD_SCALAR, out=t)
            np.add(b[start:stop], t, out=a[start:stop])

    kernels = {"read": lambda: np.matmul(a_matrix, x), "copy": lambda: np.copyto(c, a), "triad": triad}
    elements = {"read": a_matrix.size, "copy": 2 * n, "triad": 3 * n}  # per pass, the STREAM way
    times = time_round_robin(kernels, repeats)
    return {k: Timing(k, times[k], bytes_per_pass=FLOAT64_BYTES * elements[k]) for k in kernels}


def matmul_flops(sizes=(256, 512, 1024), precisions=("fp32", "fp64"), repeats: int = 3) -> dict:
    """FLOP/s of an n × n by n × n matrix multiply for each n in ``sizes`` and each of ``precisions``
    (``"fp32"``, ``"fp64"``), taking turns: ``{precision: {n: Timing}}``, 2·n³ FLOP per multiply (the
    course's "2 FLOP per multiply-add"; exactly n²·(2n − 1)).

    >>> matmul_flops(sizes=(64,), precisions=("fp32",), repeats=2)["fp32"][64].flops_per_pass == 2 * 64**3
    True
    """
    rng, fns = np.random.default_rng(0), {}
    for precision in precisions:
        dtype = MATMUL_DTYPES[one_of(precision, "precision", tuple(MATMUL_DTYPES))]
        for size in sizes:
            n = whole_number(size, "matmul size")
            x, y = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
            z = np.empty((n, n), dtype=dtype)
            fns[(precision, n)] = lambda x=x, y=y, z=z: np.matmul(x, y, out=z)
    out = {precision: {} for precision in precisions}
    for (precision, n), t in time_round_robin(fns, repeats, warmup=2).items():
        out[precision][n] = Timing(f"matmul {precision} {n}", t, flops_per_pass=2.0 * n**3)
    return out


def call_overhead_s(calls: int = 20_000, repeats: int = 5) -> Timing:
    """Time of one tiny numpy call (adding two 1-element arrays), the CPU's analogue of a kernel launch:
    a loop of ``calls`` calls ÷ ``calls`` (one call is too short for the clock), ``repeats`` times.

    >>> 0 < call_overhead_s(calls=100, repeats=2).min_s < 1e-3
    True
    """
    calls = whole_number(calls, "calls")
    x, y, z = np.ones(1), np.ones(1), np.empty(1)
    add = np.add

    def loop():
        for _ in range(calls):
            add(x, y, out=z)

    return Timing("tiny numpy call", tuple(t / calls for t in time_calls(loop, repeats)))


def small_matvec_s(rows: int = 512, cols: int = 2816, repeats: int = 7) -> Timing:
    """Time of one fp32 matrix-vector product small enough to stay in cache (512 × 2816: 5.8 MB) (s). Its
    bytes take ~0.1 ms at cache speed; the rest is the BLAS call itself, waking its threads (a scheduler
    tick, milliseconds, when other programs hold the cores): the launch overhead of the transformer.

    >>> small_matvec_s(rows=64, cols=64, repeats=2).min_s > 0
    True
    """
    rng = np.random.default_rng(0)
    w = rng.standard_normal((whole_number(rows, "rows"), whole_number(cols, "cols")), dtype=np.float32)
    x = rng.standard_normal((1, w.shape[0]), dtype=np.float32)
    return Timing("small matvec", time_calls(lambda: x @ w, repeats, warmup=2), bytes_per_pass=w.nbytes)


def ram_bytes() -> float:
    """This machine's physical memory (bytes), from the OS; NaN where the OS does not say.

    >>> ram_bytes() > 0
    True
    """
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return float("nan")


def load_average() -> float:
    """The OS's 1-minute load average (runnable processes), NaN where unavailable: above the core count,
    other work competed with the benchmark.

    >>> load_average() >= 0 or load_average() != load_average()
    True
    """
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return float("nan")


def available_cpus() -> int:
    """The CPU threads this process may use (its affinity mask where the OS has one).

    >>> available_cpus() >= 1
    True
    """
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cpuinfo() -> str:
    """The OS's description of the CPUs (``/proc/cpuinfo`` on Linux), "" where it has none.

    >>> isinstance(cpuinfo(), str)
    True
    """
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def machine_name() -> str:
    """The CPU model as the OS names it (``/proc/cpuinfo`` on Linux), else ``platform.processor()``.

    >>> isinstance(machine_name(), str)
    True
    """
    names = [
        line.split(":", 1)[1].strip()
        for line in cpuinfo().splitlines()
        if line.lower().startswith("model name")
    ]
    return names[0] if names else platform.processor() or platform.machine() or "unknown CPU"


def thread_info() -> dict:
    """What we know of the threads numpy's BLAS uses: its own count only through ``threadpoolctl`` (not a
    dependency), else the cores and the environment variables that cap it.

    >>> thread_info()["cpu_count"] >= 1
    True
    """
    variables = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
    info = {
        "cpu_count": os.cpu_count() or 1,
        "cores_available_to_process": available_cpus(),
        "env": {k: os.environ[k] for k in variables if k in os.environ},
        "blas": _blas_name(),
        "blas_threads": None,
        "blas_threads_source": "unknown (threadpoolctl not installed); the BLAS default is one per core",
    }
    try:  # only if it happens to be installed: never a dependency
        from threadpoolctl import threadpool_info  # type: ignore[import-not-found]

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            info["blas_threads"] = int(pools[0]["num_threads"])
            info["blas_threads_source"] = "threadpoolctl"
    except ImportError:
        pass
    return info


def _blas_name() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - the build info is optional decoration
        return "unknown"


def _stream_row(t: Timing) -> dict:
    return {"bytes_per_pass": t.bytes_per_pass, "best_bytes_per_s": t.best_bytes_per_s,
            "median_bytes_per_s": t.median_bytes_per_s, "min_s": t.min_s, "median_s": t.median_s,
            "repeats": len(t.times_s)}  # fmt: skip


def _matmul_row(t: Timing) -> dict:
    return {"best_flops_per_s": t.best_flops_per_s, "median_flops_per_s": t.median_flops_per_s,
            "min_s": t.min_s, "median_s": t.median_s}  # fmt: skip


def measure(quick: bool = True) -> Measurement:
    """Measure this machine: STREAM bandwidth, fp32/fp64 matmul FLOP/s, ridge point, per-call overhead.
    ``quick`` takes a few seconds (128 MB arrays, matmuls up to 1024; else 512 MB and 2048). The headline
    figures are the *best* pass (the roof the machine can reach); the details keep min and median.

    >>> m = measure(quick=True)      # doctest: +SKIP
    >>> m.ridge_flop_per_byte > 1     # doctest: +SKIP
    True
    """
    cfg = QUICK if quick else FULL
    t_start = time.perf_counter()
    stream = stream_bandwidth(cfg["stream_elements"], cfg["stream_repeats"])
    matmul = matmul_flops(cfg["matmul_sizes"], tuple(MATMUL_DTYPES), cfg["repeats"])
    overhead = call_overhead_s(repeats=cfg["repeats"] + 2)
    matvec = small_matvec_s()
    bandwidth = max(t.best_bytes_per_s for t in stream.values())
    peak = {p: max(t.best_flops_per_s for t in table.values()) for p, table in matmul.items()}
    details = {
        "quick": quick,
        "machine": machine_name(),
        "ram_bytes": ram_bytes(),
        "load_average_1min": load_average(),  # other work on the machine while measuring
        "stream_array_bytes": cfg["stream_elements"] * FLOAT64_BYTES,
        "stream": {name: _stream_row(t) for name, t in stream.items()},
        "matmul": {p: {str(n): _matmul_row(t) for n, t in table.items()} for p, table in matmul.items()},
        "call_overhead": {"min_s": overhead.min_s, "median_s": overhead.median_s},
        "small_matvec": {"min_s": matvec.min_s, "median_s": matvec.median_s, "bytes": matvec.bytes_per_pass},
        "elapsed_s": time.perf_counter() - t_start,
    }
    return Measurement(
        memory_bandwidth_bytes_per_s=bandwidth,
        matmul_flops_per_s=peak["fp32"],
        ridge_flop_per_byte=ridge_point_flop_per_byte(peak["fp32"], bandwidth),
        call_overhead_s=overhead.median_s,
        matmul_fp64_flops_per_s=peak["fp64"],
        threads=thread_info(),
        details=details,
    )
