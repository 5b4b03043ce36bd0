"""Issue 22, Macs and home GPUs and each model's own precision: Apple GPUs compute FP16 at their FP32 shader
rate; weight-only formats (GGUF, W4A16, gpt-oss's MXFP4 experts) compute in the activations' precision,
so they run on every GPU; a model's default weights are its release format."""

import pytest

import roofline as rl
from roofline.apps.cli import main
from roofline.physics import precision
from roofline.physics.precision import compute_precision, default_weight_precision, weight_format

APPLE = ["m2-ultra", "m3-max", "m4-max", "m4-pro"]


@pytest.mark.parametrize("gpu", list(rl.gpus()), ids=str)
@pytest.mark.parametrize("weights", ["fp16", "gguf-q4_k_m", "gguf-q4_0", "gguf-q8_0", "gguf-f16", "int4"])
def test_home_formats_give_a_step_on_every_gpu_where_the_model_fits(gpu, weights):
    # Llama 3 8B: 16 GB in FP16, 4.6 GiB in Q4_K_M. Every GPU has 24 GB or more, so each fits on one GPU.
    step = rl.decode_step("llama-3-8b", gpu, weight_precision=weights)  # before: Apple rows refused fp16
    assert step.fits and 0 < step.step_time_s < 1
    pre = rl.prefill("llama-3-8b", gpu, 512, weight_precision=weights)
    assert 0 < pre.step_time_s < 10


@pytest.mark.parametrize("gpu", APPLE)
def test_a_mac_computes_gguf_and_fp16_at_its_shader_rate(gpu):
    g = rl.get_gpu(gpu)
    fp32 = g.dense_flops_per_s["fp32"]
    for weights in ("fp16", "gguf-q4_k_m", "gguf-q8_0", "int4", "awq-int4", "mxfp4-experts"):
        assert rl.peak_flops_per_s(g, weights) == fp32, weights
    # A prompt long enough to be compute-bound runs at the FP16 = FP32 shader rate: 2 N FLOP per token.
    pre = rl.prefill("llama-3.2-1b", gpu, 4096, weight_precision="fp16", memory="ideal")
    assert pre.step_time_s >= pre.flops / fp32 * (1 - 1e-9)


def test_the_cli_step_answers_for_a_mac_in_fp16(capsys):
    # The repro: "has no fp16 tensor-core math" before.
    code = main(["step", "--model", "llama-3.2-1b", "--gpu", "m4-max", "--weights", "fp16", "--json"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    ("weights", "gpu", "compute"),
    [
        ("gguf-q4_k_m", "h100-sxm", "fp16"),  # llama.cpp multiplies dequantized blocks in FP16
        ("gguf-q4_0", "m2-ultra", "fp16"),
        ("int4", "h100-sxm", "bf16"),  # W4A16 kernels: BF16 where the GPU has it
        ("int4", "m4-max", "fp16"),  # ... FP16 where it has not
        ("mxfp4-experts", "m4-pro", "fp16"),  # gpt-oss on a Mac
        ("fp8", "h100-sxm", "fp8"),
    ],
)
def test_the_math_a_format_runs_in(weights, gpu, compute):
    assert compute_precision(rl.get_gpu(gpu), weights) == compute


def test_tensor_core_formats_still_need_the_hardware():
    # FP8/FP4 math is a hardware feature: no weight-only fallback for it.
    for gpu, weights in (
        ("a100-80gb-sxm", "fp8"),
        ("m4-max", "fp8"),
        ("h100-sxm", "fp4"),
        ("m4-max", "bf16"),
    ):
        with pytest.raises(rl.UnsupportedPrecisionError):
            rl.peak_flops_per_s(rl.get_gpu(gpu), weights)
    # A measured CPU row (fp32 and fp64 only) still runs GGUF, in FP32.
    cpu = rl.get_gpu("l4").__class__(**{**vars(rl.get_gpu("l4")), "dense_flops_per_s": {"fp32": 1e12}})
    assert compute_precision(cpu, "gguf-q4_k_m") == "fp32"


def test_each_model_defaults_to_its_release_format():
    assert default_weight_precision("deepseek-v3") == "fp8-block128"
    assert (
        default_weight_precision("gpt-oss-120b") == default_weight_precision("gpt-oss-20b") == "mxfp4-experts"
    )
    assert default_weight_precision("llama-2-7b") == "fp16"  # config.json torch_dtype float16
    assert default_weight_precision(rl.get_model("qwen3-8b")) == "bf16"
    for m in rl.models().values():
        assert default_weight_precision(m) == weight_format(m.checkpoint_format).id
    # DeepSeek-V3 at its released FP8 fits 8 B200s; at BF16 (2 bytes per weight) it does not.
    assert rl.fits(
        "deepseek-v3", "b200", 1, 4096, num_gpus=8, weight_precision=default_weight_precision("deepseek-v3")
    )
    assert not rl.fits("deepseek-v3", "b200", 1, 4096, num_gpus=8, weight_precision="bf16")


def test_the_gguf_f16_preset_keeps_norms_in_fp32():
    f = precision.WEIGHT_FORMATS["gguf-f16"]
    assert (f.body.id, f.embedding.id, f.lm_head.id, f.other.id) == ("fp16", "fp16", "fp16", "fp32")
    assert rl.weight_bytes("llama-3-8b", "gguf-f16") >= rl.weight_bytes("llama-3-8b", "fp16")
