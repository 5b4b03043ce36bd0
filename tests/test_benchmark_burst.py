"""A serving benchmark's TTFT against one request alone (lesson 06): the harness's burst, simulated.

Invariants from the protocol: one client never waits behind another prompt, so its mean TTFT is one
prefill of a prompt no longer than the nominal one; the first wave's C prompts arrive together and are
prefilled one batch after another, so the wave's mean TTFT grows about in proportion to C.
"""

import pytest

from roofline.errors import InvalidConfigurationError
from roofline.lessons.benchmarks_that_lie import benchmark_ttft
from roofline.scenario import Scenario


def test_one_client_gets_about_one_prefill():
    b = benchmark_ttft(Scenario(), 1, 1000, 50)
    # prompts of 800-1,000 tokens (the harness's range) against one of 1,000: never longer, at most 20 % less
    assert 0.75 * b.alone_s <= b.mean_s <= b.alone_s * (1 + 1e-9)
    assert b.ttft_s.size == 10  # the harness's 10 prompts per client


def test_the_first_wave_queues_and_the_mean_hides_it_less_than_the_median():
    b32 = benchmark_ttft(Scenario(), 32, 1000, 200)
    b64 = benchmark_ttft(Scenario(), 64, 1000, 200)
    assert b32.first_wave_s > 5 * b32.alone_s  # 32 prompts of ~900 tokens cannot share one prefill
    assert 1.5 < b64.first_wave_s / b32.first_wave_s < 2.5  # the average prompt waits for half the wave
    assert b32.median_s < b32.mean_s < b32.first_wave_s  # the burst pulls the mean up, not the median


@pytest.mark.parametrize("bad", [0, -4, 2.5])
def test_a_concurrency_that_is_not_a_count_is_refused(bad):
    with pytest.raises(InvalidConfigurationError, match="concurrency"):
        benchmark_ttft(Scenario(), bad, 1000, 200)
