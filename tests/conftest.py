"""Test-session setup shared by every test and notebook run.

``roofline measure --save`` adds the learner's own GPU rows (from the user data directory) to
``rl.gpus()``. Tests and nbval notebooks must see only the project's tables, whatever the person running
them saved, so the whole session (and every kernel it starts: they inherit the environment) points
``SPEED_PHYSICS_HOME`` at an empty temporary directory. Tests of the user table set their own. The session
also runs numpy's BLAS on one thread per process (below).
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ["SPEED_PHYSICS_HOME"] = tempfile.mkdtemp(prefix="speed-physics-test-home-")
# Two test workers and their notebook kernels share the machine's cores: a BLAS that starts one thread per
# core in each of them oversubscribes it, and its waiting threads spin while others need the core. One
# BLAS thread per process (kernels inherit it), unless the person running the tests says otherwise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
atexit.register(shutil.rmtree, os.environ["SPEED_PHYSICS_HOME"], ignore_errors=True)  # leave no folder behind

# Hypothesis: one named profile. CI (and anyone who wants repeatable runs) gets "ci": derandomized, so a
# failure found once is found on every run, with no per-example deadline on a shared 2-core machine.
# HYPOTHESIS_PROFILE=dev explores new random examples locally.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def tables(tmp_path):
    """A copy of the shipped tables; ``edit(file, old, new)`` changes one occurrence in a fresh copy of
    ``file`` (``fresh=False``: on top of earlier edits) and returns the directory."""
    for f in DATA.glob("*.toml"):
        shutil.copy(f, tmp_path / f.name)

    def edit(name, old, new, count=1, fresh=True):
        path = tmp_path / name
        text = (DATA / name).read_text() if fresh else path.read_text()
        assert old in text, f"{old!r} not in {name}"
        path.write_text(text.replace(old, new, count))
        return tmp_path

    edit.dir = tmp_path
    return edit


@pytest.fixture
def fake_machine():
    """A measured machine for tests that save or place one: 20 GB/s, 100 GFLOP/s (ridge 5 FLOP/byte)."""
    from roofline.measure.bench import Measurement

    return Measurement(
        memory_bandwidth_bytes_per_s=20e9,
        matmul_flops_per_s=100e9,
        ridge_flop_per_byte=5.0,
        call_overhead_s=1e-6,
        matmul_fp64_flops_per_s=50e9,
        threads={"cpu_count": 2, "blas": "test", "blas_threads": None},
        details={"ram_bytes": 16e9, "quick": True, "stream": {}},
    )
