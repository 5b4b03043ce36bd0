"""llama.cpp on this machine through its Python binding: load a GGUF file, quantize it, time prompts and
decode steps. The only module that imports the binding, ``llama-cpp-python`` (the ``engine`` dependency
group), which compiles llama.cpp for this CPU on its first install (minutes). On a CPU with AMX
(``amx_int8`` in /proc/cpuinfo) a native build crashes on the first quantized decode (llama.cpp issue
#20824), so ``install_command`` adds compiler flags that leave AMX out; a build that has AMX anyway is run
with ``use_extra_bufts`` off, which avoids the crash at some cost in Q4_0 speed (``Engine``).

Timing: ``time.perf_counter`` around ``llama_decode`` (which returns when the step is computed on the CPU),
after warm-up passes; token ids are fed directly (the generated models have no tokenizer).

>>> install_command().endswith("uv run --group engine roofline measure --engine llama.cpp")
True
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

from roofline.errors import InvalidConfigurationError, RooflineError

from . import bench

PACKAGE = "llama-cpp-python"
AMX_CMAKE_ARGS = "-DCMAKE_C_FLAGS=-mno-amx-int8 -DCMAKE_CXX_FLAGS=-mno-amx-int8"
QUANTIZE_FTYPES = {"Q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0", "Q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0"}  # llama.h names


class EngineNotInstalledError(RooflineError, ImportError):
    """The llama.cpp binding is not installed (it is the optional ``engine`` dependency group)."""


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU reports AMX int8 (``amx_int8`` in /proc/cpuinfo's flags).

    >>> cpu_has_amx("flags : fpu sse avx512f amx_bf16 amx_int8 amx_tile"), cpu_has_amx("flags : fpu avx2")
    (True, False)
    """
    cpuinfo = bench.cpuinfo() if cpuinfo is None else cpuinfo
    flags = (line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if line.startswith("flags"))
    return any("amx_int8" in f for f in flags)


def install_command(amx: bool | None = None) -> str:
    """The shell command that installs the binding and runs the lab, with the AMX workaround only on a CPU
    that reports AMX (the flags are GCC's, for x86).

    >>> install_command(amx=True).startswith('CMAKE_ARGS="-DCMAKE_C_FLAGS=-mno-amx-int8')
    True
    """
    amx = cpu_has_amx() if amx is None else amx
    prefix = f'CMAKE_ARGS="{AMX_CMAKE_ARGS}" ' if amx else ""
    return f"{prefix}uv run --group engine roofline measure --engine llama.cpp"


_QUIET_LOG = None  # the no-op log callback, kept alive for as long as llama.cpp may call it


def binding():
    """The ``llama_cpp`` module, with llama.cpp's logging silenced; a clear error if it is not installed."""
    global _QUIET_LOG
    try:
        import llama_cpp
    except ImportError:
        raise EngineNotInstalledError(
            f"llama.cpp's Python binding ({PACKAGE}) is not installed; it is the optional 'engine' group. "
            f"Install it and run the lab with:\n  {install_command()}"
        ) from None
    if _QUIET_LOG is None:
        _QUIET_LOG = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_QUIET_LOG, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
    return llama_cpp


def engine_info() -> dict:
    """The binding's version and the CPU features its llama.cpp was built with (for the record)."""
    lib = binding()
    system = lib.llama_print_system_info().decode(errors="replace").strip()
    return {
        "package": PACKAGE,
        "version": getattr(lib, "__version__", "unknown"),
        "system_info": system,
        "build_uses_amx": "AMX_INT8 = 1" in system,
        "cpu_has_amx": cpu_has_amx(),
    }


def quantize(src, dst, file_type: str) -> Path:
    """Quantize the GGUF at ``src`` to ``file_type`` (``"Q8_0"`` or ``"Q4_0"``) with llama.cpp's own
    quantizer on every CPU thread; return ``dst`` (written, then renamed).

    >>> quantize("model-f16.gguf", "model-q4_0.gguf", "Q4_0")   # doctest: +SKIP
    PosixPath('model-q4_0.gguf')
    """
    key = str(file_type).upper()
    if key not in QUANTIZE_FTYPES:
        raise InvalidConfigurationError(f"file_type must be one of {list(QUANTIZE_FTYPES)}: {file_type!r}")
    lib = binding()
    params = lib.llama_model_quantize_default_params()
    params.ftype = getattr(lib, QUANTIZE_FTYPES[key])
    params.nthread = os.cpu_count() or 1
    dst = Path(dst)
    tmp = dst.with_name(dst.name + ".tmp")
    if lib.llama_model_quantize(str(src).encode(), str(tmp).encode(), ctypes.byref(params)) != 0:
        raise InvalidConfigurationError(f"llama.cpp could not quantize {src} to {key}")
    os.replace(tmp, dst)
    return dst


class Engine:
    """The GGUF at ``path`` loaded in llama.cpp with one context: a KV cache of ``context_tokens`` tokens,
    passes of up to ``batch_tokens`` tokens, ``threads`` CPU threads (default all). Use as a context
    manager, or call ``close``. ``decode_s(tokens)`` runs one ``llama_decode`` and returns its seconds.

    >>> with Engine("model-f16.gguf", threads=1) as engine:                     # doctest: +SKIP
    ...     step_s = median(time_decode(engine, context_tokens=128))
    """

    def __init__(self, path, context_tokens: int = 1024, batch_tokens: int = 512, threads: int | None = None):
        lib = self._lib = binding()
        mparams = lib.llama_model_default_params()
        if engine_info()["build_uses_amx"] and cpu_has_amx():
            mparams.use_extra_bufts = False  # the AMX crash (module docstring): slower, but it runs
        self._model = lib.llama_model_load_from_file(str(path).encode(), mparams)
        if not self._model:
            raise InvalidConfigurationError(f"llama.cpp could not load {path}")
        cparams = lib.llama_context_default_params()
        cparams.n_ctx = context_tokens
        cparams.n_batch = cparams.n_ubatch = self.batch_tokens = batch_tokens
        self.context_tokens, self._cached = context_tokens, 0
        self.threads = threads or os.cpu_count() or 1
        cparams.n_threads = cparams.n_threads_batch = self.threads
        self._ctx = lib.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            lib.llama_model_free(self._model)
            raise InvalidConfigurationError(f"llama.cpp could not make a context for {path}")
        self.vocab_size = lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(self._model))

    def set_threads(self, threads: int) -> None:
        """Use ``threads`` CPU threads for decode and prompt passes from now on."""
        self.threads = int(threads)
        self._lib.llama_set_n_threads(self._ctx, self.threads, self.threads)

    def clear(self) -> Engine:
        """Empty the KV cache: the next tokens start a new sequence at position 0."""
        self._lib.llama_memory_clear(self._lib.llama_get_memory(self._ctx), True)
        self._cached = 0
        return self

    def decode_s(self, tokens) -> float:
        """Process ``tokens`` (a list of ids) after those already cached, in one pass; wall seconds (s)."""
        n = len(tokens)
        # llama.cpp aborts the whole process on these; refuse them here instead
        if not 1 <= n <= self.batch_tokens:
            raise InvalidConfigurationError(
                f"a pass takes 1 to {self.batch_tokens} tokens (batch_tokens), got {n}"
            )
        if self._cached + n > self.context_tokens:
            raise InvalidConfigurationError(
                f"{self._cached} cached + {n} new tokens exceed the context of {self.context_tokens}"
            )
        array = (self._lib.llama_token * n)(*tokens)
        batch = self._lib.llama_batch_get_one(array, n)
        t0 = time.perf_counter()
        status = self._lib.llama_decode(self._ctx, batch)
        self._lib.llama_synchronize(self._ctx)
        elapsed = time.perf_counter() - t0
        if status != 0:
            raise InvalidConfigurationError(f"llama_decode failed with status {status} on {n} tokens")
        self._cached += n
        return elapsed

    def close(self) -> None:
        if getattr(self, "_ctx", None):
            self._lib.llama_free(self._ctx)
            self._ctx = None
        if getattr(self, "_model", None):
            self._lib.llama_model_free(self._model)
            self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def tokens(self, n: int, start: int = 1) -> list[int]:
        """``n`` token ids spread over the vocabulary (any ids will do: the weights are random)."""
        return [(start + 7919 * k) % self.vocab_size for k in range(n)]


def time_prompt(engine: Engine, prompt_tokens: int, repeats: int = 3, warmup: int = 1) -> tuple[float, ...]:
    """Seconds of one prompt pass of ``prompt_tokens`` tokens on an empty cache, ``repeats`` times after
    ``warmup`` untimed passes.

    >>> time_prompt(engine, 512, repeats=3)    # doctest: +SKIP
    (1.21, 1.19, 1.22)
    """
    tokens = engine.tokens(prompt_tokens)
    return tuple(engine.clear().decode_s(tokens) for _ in range(warmup + repeats))[warmup:]


def time_decode(
    engine: Engine, context_tokens: int, steps: int = 8, repeats: int = 3, warmup: int = 1
) -> tuple[float, ...]:
    """Seconds of each single-token decode step (batch 1) after ``context_tokens`` cached tokens (s):
    ``steps`` timed steps per repeat, each repeat on a fresh cache, the first ``warmup`` repeats untimed.

    >>> len(time_decode(engine, 128, steps=8, repeats=3))   # doctest: +SKIP
    24
    """
    context, times = engine.tokens(context_tokens), []
    for _ in range(warmup + repeats):
        engine.clear().decode_s(context)
        times += [engine.decode_s(engine.tokens(1, start=k)) for k in range(steps)]
    return tuple(times[warmup * steps :])
