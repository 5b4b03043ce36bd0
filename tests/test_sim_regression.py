"""Regression check of the serving simulator's refactor into named parts (issue 18).

The numbers below are the PRE-REFACTOR simulator's outputs (``roofline.sim.engine.simulate`` as one
function, commit 9c5f5df), recorded by running that code on these seeded runs before any change. The
refactored simulator must reproduce them for today's options: the same percentiles (p50, p90, p99 of TTFT,
TPOT and end-to-end, s), iterations, preemptions, completions and stability verdict. They are not golden
physics (``tests/test_sim.py`` checks the physics by hand); they pin the behaviour across the rewrite. A
deliberate change of the ideal step time or of the scheduling rules will move them: re-record them from the
code before the change and say so in the commit.
"""

import pytest

from roofline import sim

L = sim.LengthSpec
REL = 1e-9

# name: (model, simulate keywords, pre-refactor outputs); GPU h100-sxm, ideal engine
PRE_REFACTOR = {
    "poisson_decode_first": (
        "llama-3-8b",
        dict(
            rate_per_s=40,
            requests=1500,
            seed=3,
            input_tokens=L("lognormal", 400, sigma=0.6),
            output_tokens=L("uniform", low=20, high=200),
        ),
        {
            "ttft": (0.009552091410641506, 0.0183248067075299, 0.029595581564703544),
            "tpot": (0.005416655007397, 0.0058525359497474325, 0.0065568379371085585),
            "e2e": (0.6008860270999197, 0.9926886988426998, 1.1219696287172716),
            "steps": 6939,
            "preemptions": 0,
            "completed": 1500,
            "unstable": False,
        },
    ),
    "closed_loop_ramp": (
        "llama-3-8b",
        dict(
            concurrency=24,
            requests=300,
            seed=1,
            input_tokens=L("uniform", low=0, high=900),
            output_tokens=96,
            ramp_s=0.5,
            think_time_s=0.05,
        ),
        {
            "ttft": (0.013236170677219938, 0.036346237504062455, 0.04934123650114497),
            "tpot": (0.005637628079093195, 0.005930752052644489, 0.006232104523807674),
            "e2e": (0.5510840100789398, 0.5797975814618472, 0.6092725407183093),
            "steps": 1418,
            "preemptions": 0,
            "completed": 300,
            "unstable": False,
        },
    ),
    "chunked_small_budget": (
        "llama-3-8b",
        dict(
            rate_per_s=30,
            requests=800,
            seed=2,
            input_tokens=2000,
            output_tokens=64,
            chunk_tokens=256,
            token_budget=512,
            max_batch=128,
        ),
        {
            "ttft": (0.4852535663767874, 0.7715932608065359, 0.8922405169312209),
            "tpot": (0.007521996846609017, 0.007523549834500836, 0.007523805571377678),
            "e2e": (0.9591439667632553, 1.2454410559772007, 1.3662070013985035),
            "steps": 3438,
            "preemptions": 0,
            "completed": 800,
            "unstable": False,
        },
    ),
    "prefill_first": (
        "llama-3-8b",
        dict(
            rate_per_s=30,
            requests=800,
            seed=4,
            input_tokens=L("lognormal", 1500, sigma=0.8),
            output_tokens=L("lognormal", 100, sigma=0.5),
            chunk_tokens=512,
            priority="prefill-first",
        ),
        {
            "ttft": (0.05060777054952714, 0.21795414224749907, 0.5013774931772376),
            "tpot": (0.03553708370091646, 0.05645377225524688, 0.07645667706272405),
            "e2e": (3.2319358387388624, 6.391384777700511, 10.211417729245012),
            "steps": 2546,
            "preemptions": 0,
            "completed": 800,
            "unstable": False,
        },
    ),
    "preempting_tiny_cache": (
        "llama-3-8b",
        dict(rate_per_s=30, requests=300, seed=5, input_tokens=512, output_tokens=256, kv_capacity=3000),
        {
            "ttft": (36.626117452118606, 66.59735355232512, 73.11708618680706),
            "tpot": (0.004629660901913682, 0.00718197639742998, 0.007437659908871657),
            "e2e": (38.153302152528155, 67.8370057721694, 75.00244631970072),
            "steps": 17934,
            "preemptions": 141,
            "completed": 300,
            "unstable": True,
        },
    ),
    "replicas_prefix": (
        "llama-3-8b",
        dict(
            rate_per_s=150,
            requests=1500,
            seed=6,
            replicas=3,
            prefix_hit_rate=0.5,
            input_tokens=1024,
            output_tokens=L("uniform", low=1, high=300),
        ),
        {
            "ttft": (0.013687536047363391, 0.022157846192243022, 0.03123934056586252),
            "tpot": (0.007809178933607189, 0.008308064483703132, 0.008988962000408657),
            "e2e": (1.1508705004664748, 2.0656820743813076, 2.367676264747687),
            "steps": 4595,
            "preemptions": 0,
            "completed": 1500,
            "unstable": False,
        },
    ),
    "disaggregated": (
        "llama-3-8b",
        dict(
            rate_per_s=20,
            requests=600,
            seed=7,
            prefill_workers=1,
            decode_workers=2,
            input_tokens=L("lognormal", 2000, sigma=0.5),
            output_tokens=128,
        ),
        {
            "ttft": (0.03709753225137202, 0.10365590151993728, 0.18954198665573246),
            "tpot": (0.005204592406281969, 0.005616479133831682, 0.006075622244692173),
            "e2e": (0.7035932127557443, 0.7947041511239868, 0.8869385535242574),
            "steps": 12616,
            "preemptions": 0,
            "completed": 600,
            "unstable": False,
        },
    ),
    "pipeline_tp": (
        "llama-3-8b",
        dict(
            rate_per_s=5,
            requests=300,
            seed=8,
            pipeline_stages=2,
            num_gpus=2,
            input_tokens=800,
            output_tokens=200,
        ),
        {
            "ttft": (0.004144809164105645, 0.005575374296654449, 0.005731018236376344),
            "tpot": (0.002278496591324051, 0.0023041627670280836, 0.0023170808789616027),
            "e2e": (0.4575401363873759, 0.46257743296526216, 0.46579590188338943),
            "steps": 22014,
            "preemptions": 0,
            "completed": 300,
            "unstable": False,
        },
    ),
    "model_70b_unchunked_prefill_first": (
        "llama-3-70b",
        dict(
            rate_per_s=3,
            requests=300,
            seed=9,
            num_gpus=4,
            input_tokens=L("uniform", low=100, high=4000),
            output_tokens=150,
            priority="prefill-first",
            max_batch=64,
            token_budget=4096,
        ),
        {
            "ttft": (0.09487080438625739, 0.15190957875473982, 0.21661899192163175),
            "tpot": (0.013788708146218312, 0.016161491632469917, 0.017417266713426135),
            "e2e": (2.1404995513892615, 2.491942302244061, 2.7503113911130574),
            "steps": 7518,
            "preemptions": 0,
            "completed": 300,
            "unstable": False,
        },
    ),
    "overload_truncated": (
        "llama-3-8b",
        dict(rate_per_s=1000, requests=3000, seed=10, max_sim_time_s=10.0),
        {
            "ttft": (3.237862204093222, 6.025180540563459, 6.417095820641799),
            "tpot": (0.023163156290368612, 0.023163239640151524, 0.023736479174046494),
            "e2e": (6.1795830529700355, 8.966901389440274, 9.358820197992758),
            "steps": 394,
            "preemptions": 0,
            "completed": 638,
            "unstable": True,
        },
    ),
}


@pytest.mark.parametrize("name", sorted(PRE_REFACTOR))
def test_refactored_simulator_reproduces_the_pre_refactor_outputs(name):
    model, kw, want = PRE_REFACTOR[name]
    r = sim.simulate(sim.SimConfig(model, "h100-sxm", record_timeline=False, **kw))
    for metric, got in (
        ("ttft", r.ttft_s_percentiles),
        ("tpot", r.tpot_s_percentiles),
        ("e2e", r.e2e_s_percentiles),
    ):
        assert [got["p50"], got["p90"], got["p99"]] == pytest.approx(list(want[metric]), rel=REL), metric
    assert (r.steps, r.preemptions, r.requests_completed, r.unstable) == (
        want["steps"],
        want["preemptions"],
        want["completed"],
        want["unstable"],
    )


def test_the_ideal_engine_keeps_the_assumed_scheduler_unless_told_otherwise():
    # leaving the scheduler keywords out and passing the assumed scheduler's values explicitly give one run
    model, kw, _ = PRE_REFACTOR["chunked_small_budget"]
    implicit = {k: v for k, v in kw.items() if k not in ("chunk_tokens", "token_budget", "max_batch")}
    assumed = sim.assumed_policy()
    a = sim.simulate(sim.SimConfig(model, "h100-sxm", record_timeline=False, **implicit))
    b = sim.simulate(
        sim.SimConfig(
            model,
            "h100-sxm",
            record_timeline=False,
            max_batch=assumed.max_sequences,
            token_budget=assumed.token_budget,
            chunk_tokens=None,
            priority="decode-first",
            **implicit,
        )
    )
    assert a.to_dict()["ttft_s"] == b.to_dict()["ttft_s"] and a.steps == b.steps
    assert a.policy == assumed and assumed.chunk_tokens is None
