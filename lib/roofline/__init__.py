"""roofline: the physics of LLM inference speed, in a few vectorized numpy functions.

Every lesson of the Speed Physics course is a view of this library. Units are SI inside (bytes, FLOP,
seconds, bytes/s, FLOP/s); ``roofline.units`` converts for display. Each module says which lesson
teaches it.

>>> import roofline as rl
>>> step = rl.decode_step("llama-3-8b", "h100-sxm", batch=1)
>>> round(step.step_time_s * 1e3, 2)   # 15.01 GB read (one embedding row, not the table) ÷ 3.35 TB/s
4.48
>>> round(rl.decode_floor_s(16e9, 3.35e12) * 1e3, 1)   # the study card's round figure: 16 GB ÷ 3.35 TB/s
4.8

A good engine is part of the core too (``roofline.engines``): the same step at the efficiencies real kernels
reach, with a real engine's own costs, read from the frozen calibration tables in ``data/``.

>>> t = rl.engines.decode_step_times(rl.engines.StepTimer("vllm", "llama-3-8b", "h100-sxm"), batch=1)
>>> round(float(t["total"]) * 1e3, 2) > round(float(t["floor"]) * 1e3, 2)
True
"""

from roofline import engines  # "a good engine": the same step at real kernels' efficiencies, frozen tables
from roofline.assumptions import ASSUMPTIONS, Assumption, assumption
from roofline.data import (
    GPU,
    Model,
    Price,
    add_model,
    add_models,
    get_gpu,
    get_model,
    gpus,
    model_from_config,
    models,
)
from roofline.errors import (
    ContextTooLongError,
    DataTableError,
    DoesNotFitError,
    InvalidConfigurationError,
    ModelConfigError,
    RooflineError,
    UnknownNameError,
    UnsupportedPrecisionError,
)
from roofline.physics.architecture import (
    active_parameter_count,
    attention_flops_per_pair,
    attention_flops_per_token,
    attention_pairs,
    effective_kv_tokens,
    expected_experts_touched,
    flops_per_token,
    kv_bytes_per_token,
    kv_bytes_per_token_mha,
    lm_head_parameters,
    matmul_parameters_per_token,
    parameter_breakdown,
    parameter_count,
    sequence_kv_bytes,
    weight_bytes,
    weight_bytes_read,
)
from roofline.physics.balance import (
    compute_bound_batch,
    compute_bound_prompt_tokens,
    prefill_crossover_prompt_tokens,
)
from roofline.physics.core import (
    arithmetic_intensity_flop_per_byte,
    attainable_flops_per_s,
    binding_resource,
    compute_time_s,
    memory_time_s,
    ridge_point_flop_per_byte,
    roofline_time_s,
)
from roofline.physics.cost import cost_per_million_tokens_usd, seconds_per_million_tokens, tokens_per_hour
from roofline.physics.memory import (
    MEMORY_MODELS,
    check_fits,
    check_memory,
    fits,
    kv_cache_bytes,
    max_batch,
    memory_available_bytes,
    memory_capacity_bytes,
    memory_needed_bytes,
    runtime_reserved_bytes,
    users_that_fit,
)
from roofline.physics.metrics import achieved_bandwidth_bytes_per_s, mbu, mfu
from roofline.physics.overheads import (
    amdahl_ceiling,
    amdahl_new_time_fraction,
    amdahl_speedup,
    launch_overhead_s,
)
from roofline.physics.parallel import (
    all_to_all_time_s,
    allreduce_message_bytes,
    allreduce_time_s,
    collective_latency_s,
    hop_latency_s,
    kv_replicas,
    link_kind,
    pipeline_comm_time_s,
    tensor_parallel_comm_time_s,
)
from roofline.physics.precision import (
    CHECKPOINT_ELEMENTS,
    PRECISIONS,
    TENSOR_GROUPS,
    WEIGHT_FORMATS,
    WeightFormat,
    bytes_per_element,
    get_precision,
    peak_flops_per_s,
    weight_format,
)
from roofline.physics.speculative import (
    SpeculativeStep,
    expected_tokens_per_step,
    mtp_draft_cost_ratio,
    speculative_collapse_batch,
    speculative_step,
)
from roofline.physics.step import (
    Step,
    batched_step_time_s,
    causal_attention_flops,
    decode_floor_s,
    decode_step,
    forward_step,
    mixed_step,
    prefill,
    prefill_flops,
    stalled_decode_steps,
)
from roofline.pricing import get_price, prices
from roofline.scenario import Scenario

# The public API, one group per layer of the library (the README's API section lists the same names).
__all__ = [
    # data tables and assumptions
    "GPU", "Model", "Price", "get_gpu", "get_model", "get_price", "gpus", "models", "prices",
    "add_model", "add_models", "model_from_config",
    "Assumption", "ASSUMPTIONS", "assumption",
    # errors
    "RooflineError", "InvalidConfigurationError", "UnknownNameError", "UnsupportedPrecisionError",
    "DoesNotFitError", "ContextTooLongError", "DataTableError", "ModelConfigError",
    # precision and weight formats
    "PRECISIONS", "bytes_per_element", "get_precision", "peak_flops_per_s",
    "WeightFormat", "WEIGHT_FORMATS", "weight_format", "CHECKPOINT_ELEMENTS", "TENSOR_GROUPS",
    # architecture
    "parameter_breakdown", "parameter_count", "active_parameter_count", "weight_bytes", "weight_bytes_read",
    "expected_experts_touched", "kv_bytes_per_token", "kv_bytes_per_token_mha", "attention_flops_per_token",
    "flops_per_token", "matmul_parameters_per_token", "lm_head_parameters", "sequence_kv_bytes",
    "effective_kv_tokens", "attention_pairs", "attention_flops_per_pair",
    # the roofline
    "memory_time_s", "compute_time_s", "roofline_time_s", "arithmetic_intensity_flop_per_byte",
    "ridge_point_flop_per_byte", "attainable_flops_per_s", "binding_resource",
    # the step engine
    "Step", "forward_step", "decode_step", "prefill", "mixed_step", "causal_attention_flops",
    "decode_floor_s", "batched_step_time_s", "prefill_flops", "stalled_decode_steps",
    # speculative decoding
    "SpeculativeStep", "speculative_step", "expected_tokens_per_step", "speculative_collapse_batch",
    "mtp_draft_cost_ratio",
    # balance points
    "compute_bound_prompt_tokens", "prefill_crossover_prompt_tokens", "compute_bound_batch",
    # memory
    "kv_cache_bytes", "memory_needed_bytes", "memory_capacity_bytes", "fits", "check_fits", "max_batch",
    "users_that_fit", "memory_available_bytes", "runtime_reserved_bytes", "check_memory", "MEMORY_MODELS",
    # parallelism, overheads, metrics, cost
    "allreduce_message_bytes", "allreduce_time_s", "tensor_parallel_comm_time_s", "collective_latency_s",
    "hop_latency_s", "link_kind", "kv_replicas", "pipeline_comm_time_s", "all_to_all_time_s",
    "launch_overhead_s", "amdahl_speedup", "amdahl_ceiling", "amdahl_new_time_fraction",
    "achieved_bandwidth_bytes_per_s", "mbu", "mfu",
    "cost_per_million_tokens_usd", "seconds_per_million_tokens", "tokens_per_hour",
    # the lessons' shared settings
    "Scenario",
]  # fmt: skip
