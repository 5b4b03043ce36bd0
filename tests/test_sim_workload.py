"""Workloads of the serving simulator (roofline.sim.workload): bursty arrivals and trace files."""

import json

import numpy as np
import pytest

import roofline as rl
from roofline import sim

ROWS = [
    {"arrival_s": 0.0, "input_tokens": 512, "output_tokens": 64},
    {"arrival_s": 0.05, "input_tokens": 128, "output_tokens": 16},
    {"arrival_s": 0.05, "input_tokens": 0, "output_tokens": 8},
    {"arrival_s": 0.3, "input_tokens": 2000, "output_tokens": 1},
]


HEAD = "arrival_s,input_tokens,output_tokens\n"


def _csv(rows, header="arrival_s,input_tokens,output_tokens") -> str:
    lines = [header] + [f"{r['arrival_s']},{r['input_tokens']},{r['output_tokens']}" for r in rows]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- bursty arrivals


def test_bursty_arrivals_keep_the_mean_rate_and_raise_the_spread():
    # Gamma renewal: shape 1 ÷ cv², scale cv² ÷ rate: gaps of mean 1 ÷ rate and std cv ÷ rate
    for cv in (0.5, 1.0, 3.0):
        gaps = np.diff(sim.arrivals_s(8.0, 200_001, np.random.default_rng(2), cv=cv))
        assert gaps.mean() == pytest.approx(1 / 8.0, rel=0.03)
        assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)


def test_bursts_queue_longer_than_poisson_arrivals_at_the_same_rate():
    kw = dict(rate_per_s=40, requests=1500, seed=4, input_tokens=512, output_tokens=64, record_timeline=False)
    poisson = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", **kw))
    bursty = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", interarrival_cv=4.0, **kw))
    assert (poisson.load, bursty.load) == ("poisson", "bursty")
    assert bursty.ttft_s_percentiles["p99"] > 2 * poisson.ttft_s_percentiles["p99"]
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", interarrival_cv=0.0, **kw))
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", **{**kw, "rate_per_s": float("inf")}))


# ---------------------------------------------------------------- trace files


@pytest.mark.parametrize("kind", ["json", "csv"])
def test_a_trace_file_reads_back_what_was_written(tmp_path, kind):
    p = tmp_path / f"trace.{kind}"
    p.write_text(json.dumps(ROWS) if kind == "json" else _csv(ROWS))
    t = sim.load_trace(p)
    assert t["arrival_s"].tolist() == [r["arrival_s"] for r in ROWS]
    assert t["input_tokens"].tolist() == [r["input_tokens"] for r in ROWS]
    assert t["output_tokens"].dtype == np.int64
    r = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", trace=t, requests=len(ROWS)))
    assert r.load == "trace" and r.requests_completed == len(ROWS)
    np.testing.assert_array_equal(r.arrival_s, [r_["arrival_s"] for r_ in ROWS])


def test_csv_columns_may_come_in_any_order_with_extras(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("user, output_tokens,arrival_s,input_tokens\nann,4,0.5,10\nbob,2,0.0,20\n")
    t = sim.load_trace(p)
    assert t["input_tokens"].tolist() == [10, 20] and t["arrival_s"].tolist() == [0.5, 0.0]


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("[", "not valid JSON"),
        ('{"arrival_s": 0}', "list of objects"),
        ("[1, 2]", "row 0 must be an object"),
        ('[{"arrival_s": 0, "input_tokens": 1}]', "row 0: missing field(s) 'output_tokens'"),
        ('[{"arrival_s": 0, "input_tokens": 1, "output_tokens": 1}, '
         '{"arrival_s": "soon", "input_tokens": 1, "output_tokens": 1}]',
         "'arrival_s' must be a number: row 1"),
        ('[{"arrival_s": 0, "input_tokens": 1180591620717411303424, "output_tokens": 1}]',
         "'input_tokens' must be at most 10,000,000 tokens: row 0"),
        ("[]", "no requests"),
        ("arrival_s,input_tokens\n0,1\n", "missing 'output_tokens'"),
        ("arrival_s,input_tokens,output_tokens\n0,1,1\n0.1,x,1\n", "'input_tokens' must be a number: row 1"),
        (HEAD + "0,1,1\nnan,1,1\n", "'arrival_s' must be finite and >= 0 s: row 1"),
        (HEAD + "0,1,1\n0.1,,1\n", "row 1 (line 3): field 'input_tokens' is missing"),
        ("arrival_s,input_tokens,output_tokens\n0,-5,1\n", "'input_tokens' must be >= 0 tokens: row 0"),
        ("arrival_s,input_tokens,output_tokens\n", "no requests"),
    ],
)  # fmt: skip
def test_a_malformed_trace_file_names_the_row_and_field(tmp_path, text, words):
    p = tmp_path / ("t.json" if text.lstrip()[:1] in "[{" else "t.csv")
    p.write_text(text)
    with pytest.raises(rl.RooflineError) as e:
        sim.load_trace(p)
    assert words in str(e.value) and str(p) in str(e.value)


def test_an_unreadable_trace_file_is_a_library_error(tmp_path):
    with pytest.raises(rl.RooflineError, match="cannot read the trace"):
        sim.load_trace(tmp_path / "nowhere.csv")
    with pytest.raises(rl.RooflineError, match="cannot read the trace"):
        sim.load_trace(tmp_path)  # a directory
