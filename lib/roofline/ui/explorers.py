"""Each lesson's explorer: its figure (``roofline.views``), its controls and knobs (ipywidgets) and its
readout (HTML from ``roofline.views``), put together with ``Explorer``. One function per explorer, in
lesson order; ``ui.launch_explorer()`` and the like in a notebook. ``LESSON_EXPLORERS`` lists them by
notebook, so a test (or an instructor) can build every lesson's explorer at once.

Every explorer has the four controls of a step (``AXES``: B the batch, T the context or prompt, P the
weight precision, G the GPU count) and a cost in its readout, with the lesson's own sliders beside them;
its readout's engine column describes the lesson's case (``roofline.views.readouts.StepCase``).

Taught in lessons 00–04, 06, 09, 15, 16, 24, 25, 28, 44, 59, 60 and 61, and in
notebooks/slos_and_capacity.ipynb, notebooks/quantization.ipynb, notebooks/speculative_decoding.ipynb,
notebooks/mixture_of_experts.ipynb, notebooks/attention_variants.ipynb and
notebooks/calibration_validation.ipynb (the kernel timings, ``kernel_fit_explorer``) and
notebooks/your_own_hardware.ipynb (``home_explorer``).
"""

from __future__ import annotations

import ipywidgets as W

from roofline.errors import InvalidConfigurationError
from roofline.lessons.chunked_prefill import CHUNK_OPTIONS, ChunkScenario, _chunk_scenario
from roofline.lessons.launch import CARD_CPU_S_PER_LAUNCH, CARD_KERNELS_PER_STEP
from roofline.lessons.serving import OUTPUT_TOKEN_OPTIONS, USER_OPTIONS
from roofline.scenario import Scenario
from roofline.ui.widgets import Explorer, mark_axis
from roofline.units import MS, US
from roofline.views.benchmarking import CeilingVsBatch, plausibility_readout
from roofline.views.ceilings import CeilingHeatmap, ceiling_readout
from roofline.views.chunked_prefill import PrefillTimeline, chunk_case, chunk_readout
from roofline.views.dashboard import DashboardFigure, dashboard_case, dashboard_table
from roofline.views.kvcache import kv_readout
from roofline.views.launch import LaunchBars, launch_case, launch_readout
from roofline.views.levers import (
    SPECULATIVE_DEFAULTS,
    KvPerUserVsContext,
    MoEReadVsBatch,
    QuantizationVsBatch,
    SpeculativeSpeedupVsBatch,
    attention_readout,
    moe_readout,
    quantization_readout,
    speculative_case,
    speculative_readout,
)
from roofline.views.phases import (
    LessonRooflineChart,
    PrefillVsPrompt,
    StallTimeline,
    prefill_case,
    prefill_readout,
    roofline_readout,
    stall_readout,
)
from roofline.views.plots import CostVsBatch, MemoryUse, StepTimeVsBatch
from roofline.views.profiling import AmdahlBars, amdahl_readout
from roofline.views.readouts import case_readout_for, combine_readouts, decode_readout
from roofline.views.saturation import ThroughputVsLatency, saturation_readout
from roofline.views.serving import QueueVsBatching, serving_case, serving_readout
from roofline.views.sim import BatchTimeline, timeline_readout
from roofline.views.tensor_parallel import SpeedupVsGPUs, tensor_parallel_case, tensor_parallel_readout
from roofline.views.utilization import UtilTimeline, utilization_readout

# The controls of a step every explorer offers, in the order they are laid out (batch, context, precision,
# GPU count), then the model and the GPU.
FOUR = ["batch", "context_tokens", "weight_precision", "num_gpus"]
STEP = [*FOUR, "gpu", "model"]

# --------------------------------------------------------------------------------------------------
# Lesson 00 and the decode lessons (01, 02, 04, 16, 28): the step-time model's figures
# --------------------------------------------------------------------------------------------------


def tour_explorer(scenario: Scenario | None = None) -> Explorer:
    """The start page's explorer: step time against batch, every control of a step.

    >>> tour_explorer()
    <Explorer StepTimeVsBatch: batch, context_tokens, weight_precision, num_gpus, gpu, model>
    """
    return Explorer(StepTimeVsBatch, STEP, scenario or Scenario(batch=64))


def cost_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 01's explorer: the cost per 1M tokens against batch; the price follows the GPU or is typed.

    >>> cost_explorer().scenario.batch
    64
    """
    return Explorer(
        CostVsBatch,
        [*FOUR, "gpu", "usd_per_gpu_hour", "model"],
        scenario or Scenario(batch=64, context_tokens=4096),
        presets={"the card: 64 users": {"batch": 64}, "one user": {"batch": 1}},
    )


def ceiling_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 02's explorer: the batch-1 ceiling of every GPU × weight format (the floor is one user's, so
    it has no batch or context control), G, and one cell read out with what a good engine reaches.

    >>> ceiling_explorer()
    <Explorer CeilingHeatmap: weight_precision, num_gpus, gpu, model>
    """
    return Explorer(
        CeilingHeatmap,
        ["weight_precision", "num_gpus", "gpu", "model"],
        scenario or Scenario(context_tokens=0),
        ceiling_readout,
        auto_gpus=False,  # the hatched cells that do not fit are the lesson
        presets={
            "the card: Llama 3 8B, BF16, one H100": {"weight_precision": "bf16"},
            "the card's follow-up: 70B FP8 on two H100s": {
                "model": "llama-3-70b",
                "num_gpus": 2,
                "weight_precision": "fp8",
            },
        },
    )


def roofline_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 04's explorer: the decode step on the roofline chart.

    >>> roofline_explorer()
    <Explorer LessonRooflineChart: batch, context_tokens, weight_precision, num_gpus, gpu, model>
    """
    return Explorer(
        LessonRooflineChart,
        STEP,
        scenario or Scenario(),
        combine_readouts(roofline_readout, decode_readout),
        presets={
            "decode, one user, no context": {"batch": 1, "context_tokens": 0},
            "decode, 64 users x 4,096 tokens": {"batch": 64, "context_tokens": 4096},
        },
    )


def step_time_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 16's explorer: the step's parts against batch, with the KV precision too.

    >>> step_time_explorer().scenario.batch
    32
    """
    return Explorer(
        StepTimeVsBatch,
        [*STEP[:4], "kv_precision", *STEP[4:]],
        scenario or Scenario(batch=32),
        presets={
            "the card: 32 users x 1,000 tokens": {"batch": 32, "context_tokens": 1000},
            "one user alone": {"batch": 1, "context_tokens": 1000},
            "64 users x 4,096 tokens": {"batch": 64, "context_tokens": 4096},
        },
    )


def kv_cache_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 28's explorer: weights and KV against the memory, with the KV precision.

    >>> kv_cache_explorer().scenario.context_tokens
    4096
    """
    return Explorer(
        MemoryUse,
        [*STEP[:4], "kv_precision", *STEP[4:]],
        scenario or Scenario(batch=64, context_tokens=4096),
        kv_readout,  # the KV per token and the largest batch, then the step: floor, a good engine, the cost
        presets={
            "the card: 64 users x 4,096 tokens": {"batch": 64, "context_tokens": 4096},
            "the card's 32 users x 1,000 tokens": {"batch": 32, "context_tokens": 1000},
        },
    )


# --------------------------------------------------------------------------------------------------
# Lesson 03: kernel launches
# --------------------------------------------------------------------------------------------------


def launch_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 03's explorer: kernels per step, CPU µs per launch, CUDA graphs on/off, and the step they act
    on.

    >>> ex = launch_explorer()
    >>> ex.set(kernels_per_step=100, cuda_graphs=True); ex.live.options["kernels_per_step"]
    100
    """
    knobs = {
        "kernels_per_step": W.IntSlider(
            value=CARD_KERNELS_PER_STEP, min=10, max=1000, step=10, description="kernels per step"
        ),
        "cpu_us_per_launch": W.FloatSlider(
            value=CARD_CPU_S_PER_LAUNCH / US, min=1, max=20, step=0.5, description="CPU µs per launch"
        ),
        "cuda_graphs": W.Checkbox(value=False, description="CUDA graphs (one replay per step)"),
    }

    def to_options(v):
        return {
            "kernels_per_step": v["kernels_per_step"],
            "cpu_s_per_launch": v["cpu_us_per_launch"] * US,
            "cuda_graphs": v["cuda_graphs"],
        }

    return Explorer(
        LaunchBars,
        STEP,
        scenario or Scenario(context_tokens=0),
        # the launch budget, then the step with its launches: the floor beside a good engine, the cost
        combine_readouts(launch_readout, case_readout_for(launch_case)),
        knobs=knobs,
        to_options=to_options,
    )


# --------------------------------------------------------------------------------------------------
# Lesson 06: benchmarks that lie
# --------------------------------------------------------------------------------------------------


def plausibility_explorer(claimed_tokens_per_s: float = 2000, scenario: Scenario | None = None) -> Explorer:
    """Lesson 06's explorer: type a claimed tokens/s; choose model, GPU, GPU count, weight precision,
    batch and context.

    >>> ex = plausibility_explorer()
    >>> ex.set(claimed_tokens_per_s=150.0); ex.readout.value.count("plausible")
    1
    >>> ex.set(model="llama-3-70b", weight_precision="fp8", num_gpus=2); ex.scenario.num_gpus
    2
    """
    knobs = {
        "claimed_tokens_per_s": W.BoundedFloatText(
            value=claimed_tokens_per_s, min=1, max=1e7, step=10, description="claimed tokens/s"
        )
    }
    return Explorer(
        CeilingVsBatch,
        STEP,
        scenario or Scenario(context_tokens=0),
        plausibility_readout,  # the claim against the ceiling, then one step: floor, a good engine, the cost
        knobs=knobs,
        presets={
            "the card: teammate's 2,000 tok/s, one user": {"claimed_tokens_per_s": 2000.0, "batch": 1},
            "the card: the PM's 300 tok/s, one user": {"claimed_tokens_per_s": 300.0, "batch": 1},
        },
    )


# --------------------------------------------------------------------------------------------------
# Lesson 09: what GPU-util measures
# --------------------------------------------------------------------------------------------------


def utilization_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 09's explorer: batch (MFU rises, GPU-util stays at 100 %) and the gap between steps.

    >>> ex = utilization_explorer()
    >>> ex.set(gap_ms=6.0); 'data-key="&quot;GPU-util&quot;"><b>100%' in ex.readout.value
    False
    """
    knobs = {
        "gap_ms": W.FloatSlider(
            value=0.0,
            min=0.0,
            max=12.0,
            step=0.5,
            description="idle gap after each step (ms)",
            continuous_update=False,
        ),
        "window_ms": W.SelectionSlider(
            options=[0.5, 1.0, 2.0, 5.0],
            value=1.0,
            description="sampler window (ms)",
            continuous_update=False,
        ),
    }

    def to_options(v):
        return {"gap_s": v["gap_ms"] * MS, "window_s": v["window_ms"] * MS, "n_steps": 3}

    return Explorer(
        UtilTimeline,
        STEP,
        scenario or Scenario(context_tokens=0),
        utilization_readout,
        knobs=knobs,
        to_options=to_options,
        presets={
            "the card: one user, steps back to back": {"batch": 1, "gap_ms": 0.0},
            "64 users, steps back to back": {"batch": 64, "gap_ms": 0.0},
            "one user, a 6 ms gap after each step": {"batch": 1, "gap_ms": 6.0},
        },
    )


# --------------------------------------------------------------------------------------------------
# Lesson 15: prefill against decode
# --------------------------------------------------------------------------------------------------


def prefill_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 15's first explorer: one prompt's prefill against its length P (the context it fills).

    >>> prefill_explorer()
    <Explorer PrefillVsPrompt: prompt_tokens, weight_precision, num_gpus, gpu, model>
    """
    return Explorer(
        PrefillVsPrompt,
        ["prompt_tokens", "weight_precision", "num_gpus", "gpu", "model"],
        scenario or Scenario(prompt_tokens=500),
        combine_readouts(prefill_readout, case_readout_for(prefill_case)),
    )


def stall_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 15's second explorer: B users streaming at T tokens each when a P-token paste arrives.

    >>> stall_explorer().scenario.prompt_tokens
    8000
    """
    return Explorer(
        StallTimeline,
        ["batch", "context_tokens", "prompt_tokens", "weight_precision", "num_gpus", "gpu", "model"],
        scenario or Scenario(batch=30, context_tokens=1000, prompt_tokens=8000),
        combine_readouts(stall_readout, decode_readout),  # the streaming users' step, both ways, priced
    )


# --------------------------------------------------------------------------------------------------
# Lesson 24: tensor parallelism
# --------------------------------------------------------------------------------------------------


def tensor_parallel_explorer(scenario: Scenario | None = None) -> Explorer:
    """The lesson-24 explorer: model, GPU, weight precision, G, batch, context, and all-reduces on/off.
    Taught in lesson 24.

    >>> tensor_parallel_explorer()
    <Explorer SpeedupVsGPUs: batch, context_tokens, weight_precision, num_gpus, gpu, model, communication>
    """
    scenario = scenario or Scenario(model="llama-3-70b", weight_precision="fp8", num_gpus=2, context_tokens=0)
    knob = W.Checkbox(value=True, description="include the all-reduces", indent=False)
    return Explorer(
        SpeedupVsGPUs,
        STEP,
        scenario,
        # the split, then the step on G GPUs with the all-reduces as the knob says: the floor beside a good
        # engine, the cost
        combine_readouts(tensor_parallel_readout, case_readout_for(tensor_parallel_case)),
        knobs={"communication": knob},
    )


# --------------------------------------------------------------------------------------------------
# Lesson 25: batching a queue of users
# --------------------------------------------------------------------------------------------------


def serving_explorer(scenario: Scenario | None = None, users: int = 20, output_tokens: int = 400):
    """The lesson-25 explorer: users queued (they are the batch B of the batched server), output tokens
    per request, context per user, precision, GPUs. Taught in lesson 25.

    >>> serving_explorer().live.options
    {'users': 20, 'output_tokens': 400}
    """
    scenario = scenario or Scenario()
    knobs = {
        "users": mark_axis(
            W.SelectionSlider(
                options=sorted(set(USER_OPTIONS) | {users}),
                value=users,
                description="users U = batch B",
                continuous_update=False,
            ),
            "batch",
        ),
        "output_tokens": W.SelectionSlider(
            options=sorted(set(OUTPUT_TOKEN_OPTIONS) | {output_tokens}),
            value=output_tokens,
            description="output tokens n",
            continuous_update=False,
        ),
    }
    # the lesson's table, then one decode step of the batched server (all U users): floor, engine, cost
    readout = combine_readouts(serving_readout, case_readout_for(serving_case))
    return Explorer(
        QueueVsBatching, ["context_tokens", "weight_precision", "num_gpus", "gpu", "model"], scenario,
        readout, knobs=knobs,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Lesson 44: chunked prefill
# --------------------------------------------------------------------------------------------------


def chunk_explorer(scenario: Scenario | None = None, figure=PrefillTimeline):
    """An ``Explorer`` with sliders for decoding users, prompt length and the chunk size C.

    The chunk size is not a ``Scenario`` field, so this adds its own slider to the standard explorer.

    >>> ex = chunk_explorer(ChunkScenario(batch=30, prompt_tokens=8000))
    >>> ex.set(chunk_tokens=256); ex.scenario.chunk_tokens
    256

    Taught in lesson 44.
    """
    s = _chunk_scenario(scenario or ChunkScenario(batch=30, prompt_tokens=8000))
    slider = W.SelectionSlider(
        options=sorted(set(CHUNK_OPTIONS) | {s.chunk_tokens}),
        value=s.chunk_tokens,
        description="chunk size C (tokens)",
        continuous_update=False,
    )
    # the lesson's table, then the mixed step (the decoders plus one chunk): floor, engine, cost
    readout = combine_readouts(chunk_readout, case_readout_for(chunk_case))
    controls = ["batch", "prompt_tokens", ("chunk_tokens", slider), "context_tokens", *STEP[2:]]
    ex = Explorer(figure, controls, s, readout)
    ex.controls["batch"].description = "decoding users B"
    return ex


# --------------------------------------------------------------------------------------------------
# Lesson 59: the dashboard
# --------------------------------------------------------------------------------------------------


def dashboard_explorer(scenario: Scenario | None = None, **options):
    """An ``Explorer`` over the dashboard: concurrent users, context, precision, GPUs, GPU and model.

    >>> ex = dashboard_explorer(Scenario(batch=64, context_tokens=4096))
    >>> ex.set(batch=300); round(ex.live.dashboard.waiting)
    198

    Taught in lesson 59.
    """
    s = scenario or Scenario(batch=64, context_tokens=4096)
    if s.batch < 1:
        raise InvalidConfigurationError("the dashboard needs at least one user")
    live = DashboardFigure(s, **options)

    def readout(scenario, options=None):  # the explorer updates the figure first: its dashboard is current
        d = live.dashboard
        return dashboard_table(d) + case_readout_for(lambda s, o: dashboard_case(s, d))(scenario, options)

    ex = Explorer(live, controls=STEP, scenario=s, readout=readout)
    ex.controls["batch"].description = "concurrent users B"
    return ex


# --------------------------------------------------------------------------------------------------
# Lesson 60: Amdahl's law
# --------------------------------------------------------------------------------------------------


def amdahl_explorer(
    p1=0.3, s1=3.0, p2=0.5, s2=2.0, names=("attention", "MLP"), scenario: Scenario | None = None
) -> Explorer:
    """Lesson 60's explorer: share and speedup of two non-overlapping optimizations, acting on the decode
    step the four controls set (its time and cost before and after).

    >>> ex = amdahl_explorer()
    >>> ex.set(s2=1.0); "1.25x" in ex.readout.value
    True
    >>> ex.set(p2=0.9); "Not possible" in ex.message.value     # 0.3 + 0.9 > 1: parts would overlap
    True
    >>> ex.set(p1=0.3, s1=7.0, p2=0.0); "1.35x" in ex.readout.value   # 1 / (0.7 + 0.3 / 7) = 1.346
    True
    """

    # Sliders that move on release; their readouts take typed values (e.g. a share of 0.37, a 7x speedup).
    def frac(v, d):
        return W.FloatSlider(value=v, min=0.0, max=1.0, step=0.01, description=d, continuous_update=False)

    def speed(v, d):  # 1x to 1,000x on a log scale
        return W.FloatLogSlider(
            value=v,
            base=10,
            min=0,
            max=3,
            step=0.01,
            description=d,
            continuous_update=False,
            readout_format=".3g",
        )

    knobs = {
        "p1": frac(p1, f"{names[0]}: share p₁"),
        "s1": speed(s1, f"{names[0]}: speedup s₁"),
        "p2": frac(p2, f"{names[1]}: share p₂"),
        "s2": speed(s2, f"{names[1]}: speedup s₂"),
    }

    def to_options(v):
        return {**v, "names": names}

    presets = {
        "the card: attention 30% made 3x": {"p1": 0.3, "s1": 3.0, "p2": 0.0, "s2": 1.0},
        "the card: attention 3x and MLP (50%) 2x": {"p1": 0.3, "s1": 3.0, "p2": 0.5, "s2": 2.0},
    }
    return Explorer(
        AmdahlBars, STEP, scenario or Scenario(), amdahl_readout, knobs=knobs, to_options=to_options,
        presets=presets,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Lesson 61: when decode turns compute-bound
# --------------------------------------------------------------------------------------------------


def saturation_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 61's explorer: throughput against latency as the batch grows; B marks the lesson's batch
    (512 users at 128 tokens each: past the flip, compute-bound).

    >>> s = saturation_explorer().scenario; s.batch, s.context_tokens
    (512, 128)
    """
    return Explorer(
        ThroughputVsLatency,
        STEP,
        scenario or Scenario(batch=512, context_tokens=128),
        combine_readouts(saturation_readout, decode_readout),  # then the step at B: floor, engine, cost
    )


# --------------------------------------------------------------------------------------------------
# SLOs and capacity: the serving simulator's batch timeline
# --------------------------------------------------------------------------------------------------


def timeline_explorer(scenario=None, load: float = 0.9, chunk_tokens: int = 512, requests: int = 150):
    """The batch-timeline explorer: load (a fraction of the sustainable rate; the batch follows from it),
    chunk size, prompt and answer lengths, precision, GPUs, model and GPU. ``requests`` stays at a few
    hundred at most, so a slider move redraws fast.

    >>> ex = timeline_explorer()
    >>> ex.set(load=0.5); ex.live.options["load"]
    0.5
    """

    def slider(options, value, description):
        return W.SelectionSlider(
            options=sorted(set(options) | {value}), value=value, description=description,
            continuous_update=False,
        )  # fmt: skip

    knobs = {
        "load": slider([0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.1, 1.3], load, "load (× sustainable)"),
        "chunk_tokens": slider([0, 256, 512, 1024, 2048, 4096], chunk_tokens, "chunk (0 = off)"),
        "input_tokens": mark_axis(slider([256, 512, 1000, 2000, 4000, 8000], 2000, "prompt T (tokens)"), "T"),
        "output_tokens": slider([50, 100, 200, 400, 800], 200, "answer (tokens)"),
    }

    def to_options(values):
        return {**values, "requests": requests}

    return Explorer(
        BatchTimeline,
        controls=["weight_precision", "num_gpus", "gpu", "model"],
        scenario=scenario,
        readout=timeline_readout,
        knobs=knobs,
        to_options=to_options,
    )


# --------------------------------------------------------------------------------------------------
# The levers: quantization, speculative decoding, mixture of experts, attention variants
# --------------------------------------------------------------------------------------------------


def quantization_explorer(scenario: Scenario | None = None) -> Explorer:
    """The quantization lesson's explorer: every control of a step, and the KV precision."""
    return Explorer(
        QuantizationVsBatch,
        controls=[*STEP[:4], "kv_precision", *STEP[4:]],
        scenario=scenario or Scenario(batch=64, context_tokens=128),
        readout=combine_readouts(quantization_readout, decode_readout),
    )


def speculative_knobs(**values) -> dict:
    """Sliders for the drafts k, the acceptance α and the draft-cost ratio r."""
    v = {**SPECULATIVE_DEFAULTS, **values}
    return {
        "draft_tokens": W.IntSlider(
            value=v["draft_tokens"], min=0, max=12, description="drafts k", continuous_update=False
        ),
        "acceptance": W.FloatSlider(
            value=v["acceptance"], min=0.0, max=1.0, step=0.05, description="acceptance α",
            continuous_update=False,
        ),
        "draft_cost_ratio": W.FloatSlider(
            value=v["draft_cost_ratio"], min=0.0, max=0.5, step=0.01, description="draft cost r",
            continuous_update=False,
        ),
    }  # fmt: skip


def speculative_explorer(scenario: Scenario | None = None, **knob_values) -> Explorer:
    """The speculative-decoding lesson's explorer: every control of a step, and k, α, r; the engine column
    times the speculative cycle (the drafts and the verify step)."""
    return Explorer(
        SpeculativeSpeedupVsBatch,
        controls=STEP,
        scenario=scenario or Scenario(context_tokens=128),
        readout=combine_readouts(speculative_readout, case_readout_for(speculative_case)),
        knobs=speculative_knobs(**knob_values),
    )


def moe_explorer(scenario: Scenario | None = None) -> Explorer:
    """The MoE lesson's explorer: every control of a step."""
    return Explorer(
        MoEReadVsBatch,
        controls=STEP,
        scenario=scenario or Scenario(model="mixtral-8x7b", num_gpus=2, batch=8),
        readout=combine_readouts(moe_readout, decode_readout),
    )


def attention_explorer(scenario: Scenario | None = None) -> Explorer:
    """The attention-variants lesson's explorer: every control of a step, and the KV precision."""
    return Explorer(
        KvPerUserVsContext,
        controls=[*STEP[:4], "kv_precision", *STEP[4:]],
        scenario=scenario or Scenario(model="mistral-7b", context_tokens=32768, batch=16),
        readout=combine_readouts(attention_readout, decode_readout),
    )


# Every lesson's explorers, by notebook (stem), each built with its starting scenario by calling it. The
# notebooks call these (``ui.cost_explorer()``); tests/test_ui.py checks that they do.
# --------------------------------------------------------------------------------------------------
# notebooks/calibration_validation.ipynb: the kernel timings behind an engine's numbers
# --------------------------------------------------------------------------------------------------


def kernel_fit_explorer(gpu: str = "h100-sxm", engine: str = "vllm", dtype: str = "bf16") -> W.VBox:
    """A GEMM's measured TFLOP/s against the kernel model, for any timed GPU, engine and GEMM format
    (``roofline.views.engines.kernel_fit_figure``). Not a step explorer: it shows the data a step's kernel
    numbers come from. The picture is an ``Image`` widget, so a saved notebook keeps the last one."""
    from roofline.calibration.kernels import load_kernel_table
    from roofline.views.engines import kernel_fit_figure

    t = load_kernel_table("gemm.csv")
    timed = set(zip(t["gpu"].tolist(), t["engine"].tolist(), t["dtype"].tolist(), strict=True))
    menus = [
        W.Dropdown(options=sorted({c[i] for c in timed}), value=v, description=name)
        for i, (name, v) in enumerate((("GPU", gpu), ("engine", engine), ("GEMM format", dtype)))
    ]
    image = W.Image(format="png", layout=W.Layout(max_width="100%"))
    note = W.HTML()

    def redraw(_=None):
        key = tuple(m.value for m in menus)
        if key not in timed:
            note.value = f"<p>{key[1]} has no {key[2]} GEMM timings on {key[0]}: pick another format.</p>"
            return
        note.value = ""
        image.value = kernel_fit_figure(*key).png_bytes

    for m in menus:
        m.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox(menus, layout=W.Layout(flex_flow="row wrap")), image, note])


# --------------------------------------------------------------------------------------------------
# notebooks/your_own_hardware.ipynb: a model on a Mac or a home GPU
# --------------------------------------------------------------------------------------------------

HOME_GPUS = ("m4-max", "m4-pro", "m3-max", "m2-ultra", "rtx-3090", "rtx-4090", "rtx-5090", "rtx-pro-6000")
HOME_FORMATS = ("gguf-q4_k_m", "gguf-q8_0", "gguf-f16", "mxfp4-experts")


def home_explorer(
    model: str = "qwen3-30b-a3b", fmt: str = "gguf-q4_k_m", context_tokens: int = 1000
) -> W.VBox:
    """One model in one format on every home machine: llama.cpp's decode and prompt speed, the floor, whether
    it fits and what a million tokens cost (``roofline.lessons.home.local_speeds``), as a table."""
    from roofline.data import models
    from roofline.lessons.home import local_speeds
    from roofline.views.home import local_speeds_html

    model_menu = W.Dropdown(options=list(models()), value=model, description="model")
    format_menu = W.Dropdown(options=HOME_FORMATS, value=fmt, description="format")
    context = W.IntSlider(value=context_tokens, min=0, max=32768, step=500, description="context",
                          continuous_update=False)  # fmt: skip
    table = W.HTML()

    def redraw(_=None):
        rows = local_speeds([model_menu.value], HOME_GPUS, [format_menu.value], context_tokens=context.value)
        table.value = local_speeds_html(rows) if rows else "<p>No home machine computes this format.</p>"

    for w in (model_menu, format_menu, context):
        w.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox([model_menu, format_menu, context], layout=W.Layout(flex_flow="row wrap")), table])


LESSON_EXPLORERS = {
    "00_start_here": (tour_explorer,),
    "01_token_cost": (cost_explorer,),
    "02_decode_floor": (ceiling_explorer,),
    "03_launch_overhead": (launch_explorer,),
    "04_roofline": (roofline_explorer,),
    "06_benchmarks_that_lie": (plausibility_explorer,),
    "09_gpu_util": (utilization_explorer,),
    "15_prefill_vs_decode": (prefill_explorer, stall_explorer),
    "16_step_time": (step_time_explorer,),
    "24_tensor_parallel": (tensor_parallel_explorer,),
    "25_batching": (serving_explorer,),
    "28_kv_cache": (kv_cache_explorer,),
    "44_chunked_prefill": (chunk_explorer,),
    "59_dashboard": (dashboard_explorer,),
    "60_amdahl": (amdahl_explorer,),
    "61_compute_bound": (saturation_explorer,),
    "slos_and_capacity": (timeline_explorer,),
    "quantization": (quantization_explorer,),
    "speculative_decoding": (speculative_explorer,),
    "mixture_of_experts": (moe_explorer,),
    "attention_variants": (attention_explorer,),
}

# Where a lesson leaves one of the four controls out on purpose (the browser test reads this).
LEFT_OUT = {
    "02_decode_floor": {
        "batch": "the floor is one user's (batch 1 by definition)",
        "context_tokens": "the floor reads the weights alone",
    },
    "slos_and_capacity": {"batch": "the simulator's batch follows from the load"},
}
