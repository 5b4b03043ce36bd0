"""Bad input gets a clear error, never a silent nonsense number."""

import numpy as np
import pytest

import roofline as rl


@pytest.mark.parametrize("bad", [0, -1, -32, np.nan, "many"])
def test_batch_must_be_at_least_one(bad):
    with pytest.raises(rl.InvalidConfigurationError, match="batch"):
        rl.decode_step("llama-3-8b", "h100-sxm", batch=bad)


def test_negative_context_and_gpus():
    with pytest.raises(rl.InvalidConfigurationError, match="context_tokens"):
        rl.decode_step("llama-3-8b", "h100-sxm", context_tokens=-5)
    with pytest.raises(rl.InvalidConfigurationError, match="num_gpus"):
        rl.decode_step("llama-3-8b", "h100-sxm", num_gpus=0)
    with pytest.raises(rl.InvalidConfigurationError, match="prompt_tokens"):
        rl.prefill("llama-3-8b", "h100-sxm", 0)


def test_unknown_names_suggest_the_closest():
    with pytest.raises(rl.UnknownNameError) as err:
        rl.get_gpu("H100_SXM")
    assert "h100-sxm" in str(err.value)
    with pytest.raises(rl.UnknownNameError, match="llama-3-70b"):
        rl.decode_step("llama-3-70", "h100-sxm")
    with pytest.raises(rl.UnknownNameError, match="fp8"):
        rl.decode_step("llama-3-8b", "h100-sxm", weight_precision="fp-8")
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)


def test_unsupported_precision_for_gpu():
    with pytest.raises(rl.UnsupportedPrecisionError, match="A100.*fp8"):
        rl.decode_step("llama-3-8b", "a100-80gb-sxm", weight_precision="fp8")
    with pytest.raises(rl.UnsupportedPrecisionError, match="fp4"):
        rl.decode_step("llama-3-8b", "h100-sxm", weight_precision="fp4")
    rl.decode_step("llama-3-8b", "b200", weight_precision="fp4")  # Blackwell has FP4 math


def test_configuration_that_does_not_fit_is_not_given_a_time():
    with pytest.raises(rl.DoesNotFitError, match="needs .* GB"):
        rl.decode_step("llama-3-70b", "h100-sxm")  # 141 GB of BF16 weights on one 80 GB GPU
    with pytest.raises(rl.DoesNotFitError):
        rl.decode_step("llama-3-8b", "h100-sxm", batch=512, context_tokens=8192)
    masked = rl.decode_step("llama-3-8b", "h100-sxm", batch=[1, 512], context_tokens=8192, on_overflow="mask")
    assert masked.fits.tolist() == [True, False]
    assert np.isnan(masked.step_time_s[1]) and np.isnan(masked.tokens_per_s_total[1])
    assert np.isfinite(masked.step_time_s[0])


def test_max_batch_is_zero_when_weights_alone_overflow():
    assert rl.max_batch("llama-3.1-405b", "h100-sxm", 1000, num_gpus=8) == 0  # 812 GB > 640 GB
    assert rl.max_batch("llama-3.1-405b", "h100-sxm", 1000, num_gpus=8, weight_precision="fp8") > 0


def test_amdahl_rejects_overlapping_fractions_and_bad_speedups():
    with pytest.raises(rl.InvalidConfigurationError, match="add up"):
        rl.amdahl_speedup([0.6, 0.5], [2, 2])
    with pytest.raises(rl.InvalidConfigurationError, match="speedups"):
        rl.amdahl_speedup(0.3, 0)
    assert rl.amdahl_speedup(0.3, np.inf) == pytest.approx(1 / 0.7)  # a part made free


def test_cost_needs_positive_throughput():
    with pytest.raises(rl.InvalidConfigurationError, match="tokens_per_s"):
        rl.cost_per_million_tokens_usd(3.0, 0)


def test_a_broken_data_table_is_a_library_error_and_a_clean_cli_error(tmp_path):
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from roofline import data

    assert issubclass(data.DataTableError, rl.RooflineError)
    root = Path(__file__).resolve().parents[1]
    for f in (root / "data").glob("*.toml"):
        shutil.copy(f, tmp_path / f.name)
    gpus = tmp_path / "gpus.toml"
    gpus.write_text(gpus.read_text().replace("memory_gb = 80", "memory_gb = true", 1))  # was read as 1 GB
    with pytest.raises(data.DataTableError, match=r"gpus.toml, row 'h100-sxm', field 'memory_gb'"):
        data.load_gpus(tmp_path)

    env = {**os.environ, "ROOFLINE_DATA_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "roofline.apps.cli", "list", "gpus", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "DataTableError"
    assert (
        "gpus.toml" in error["message"]
        and "'h100-sxm'" in error["message"]
        and "memory_gb" in error["message"]
    )
    assert proc.stderr.startswith("error:") and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: rl.decode_step("llama-3-8b", "h100-sxm", memory="vllm"),
            rl.InvalidConfigurationError,
            "memory",
        ),
        (
            lambda: rl.max_batch("llama-3-8b", "h100-sxm", 1000, memory="all"),
            rl.InvalidConfigurationError,
            "memory",
        ),
        (
            lambda: rl.decode_step("llama-3-8b", "h100-sxm", num_gpus=2, parallelism="data"),
            rl.InvalidConfigurationError,
            "parallelism",
        ),
        (
            lambda: rl.prefill("llama-3-8b", "h100-sxm", 100, logits="all"),
            rl.InvalidConfigurationError,
            "logits",
        ),
        (lambda: rl.weight_bytes("llama-3-8b", "q4km"), rl.UnknownNameError, "Unknown precision"),
        (lambda: rl.decode_step("llama-3-8b", "m4-max"), rl.UnsupportedPrecisionError, "fp32"),
        (
            lambda: rl.decode_step("llama-3-8b", "a100-80gb-sxm", weight_precision="fp8-block128"),
            rl.UnsupportedPrecisionError,
            "fp8",
        ),
    ],
)
def test_new_physics_options_fail_with_library_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
    assert issubclass(error, rl.RooflineError)
