"""roofline: the physics of LLM inference speed, in a few vectorized numpy functions.

Every lesson of the Speed Physics course is a view of this library. Units are SI inside (bytes, FLOP,
seconds, bytes/s, FLOP/s); ``roofline.units`` converts for display. Each module says which lesson
teaches it.

>>> import roofline as rl
>>> step = rl.decode_step("llama-3-8b", "h100-sxm", batch=1)
>>> round(step.step_time_s * 1e3, 1)
4.8
"""

from roofline.data import GPU, Model, Price, get_gpu, get_model, get_price, gpus, models, prices
from roofline.errors import (
    DoesNotFitError,
    InvalidConfigurationError,
    RooflineError,
    UnknownNameError,
    UnsupportedPrecisionError,
)
from roofline.physics.architecture import (
    active_parameter_count,
    attention_flops_per_token,
    expected_experts_touched,
    flops_per_token,
    kv_bytes_per_token,
    kv_bytes_per_token_mha,
    parameter_breakdown,
    parameter_count,
    weight_bytes,
    weight_bytes_read,
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
from roofline.physics.decode import DecodeStep, batched_step_time_s, decode_floor_s, decode_step
from roofline.physics.memory import (
    check_fits,
    fits,
    kv_cache_bytes,
    max_batch,
    memory_capacity_bytes,
    memory_needed_bytes,
    users_that_fit,
)
from roofline.physics.metrics import achieved_bandwidth_bytes_per_s, mbu, mfu
from roofline.physics.overheads import (
    amdahl_ceiling,
    amdahl_new_time_fraction,
    amdahl_speedup,
    launch_overhead_s,
)
from roofline.physics.parallel import allreduce_message_bytes, allreduce_time_s, tensor_parallel_comm_time_s
from roofline.physics.precision import PRECISIONS, bytes_per_element, get_precision, peak_flops_per_s
from roofline.physics.prefill import (
    Prefill,
    causal_attention_flops,
    compute_bound_prompt_tokens,
    prefill,
    prefill_flops,
    stalled_decode_steps,
)

__all__ = [name for name in dir() if not name.startswith("_")]
