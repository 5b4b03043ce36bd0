"""Issue 22, a price on every GPU: every GPU of the tables has a sourced default price, rented GPUs an
on-demand list price per GPU-hour, GPUs people buy the cost of owning them (purchase, lifetime, power,
electricity: assumptions, the hourly figure derived, never stored); lessons price every GPU."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline import data, pricing
from roofline.physics.cost import ownership_usd_per_hour
from roofline.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
BOUGHT = {"rtx-3090", "rtx-4090", "rtx-5090", "rtx-pro-6000", "m2-ultra", "m3-max", "m4-max", "m4-pro"}
# GPUs costed by ownership: the ones people buy, and the H20, which no cloud outside China rents.
OWNED = BOUGHT | {"h20"}


@pytest.mark.parametrize("gpu", list(rl.gpus()), ids=str)
def test_every_gpu_has_a_default_price_of_the_kind_a_user_pays(gpu):
    price = pricing.default_price(gpu)
    assert price is not None and price.gpu == gpu  # before: 3 of 25 GPUs had a price
    assert 0.05 < price.usd_per_gpu_hour < 20
    assert price.source.startswith("https://") and len(price.note) > 80
    # GPUs people buy (GeForce, workstation cards, Macs) cost what owning them costs; the rest are rented.
    assert (price.kind == "own") == (gpu in OWNED)


def test_the_course_example_stays_the_h100_default():
    assert pricing.default_price("h100-sxm").id == "h100-example-3usd"
    assert pricing.default_price("h100-sxm").usd_per_gpu_hour == 3.0
    assert Scenario().usd_per_gpu_hour == 3.0 and Scenario().price_id == "h100-example-3usd"


def test_ownership_cost_from_first_principles():
    # $1,599 over 3 years of 8 h a day = 8,766 h: $0.18241/h; 450 W at $0.187/kWh = $0.08415/h.
    assert ownership_usd_per_hour(1599, 3, 8, 450, 0.187) == pytest.approx(1599 / 8766 + 0.45 * 0.187)
    # Used around the clock the hardware share is a third; power is paid per hour of use either way.
    around = ownership_usd_per_hour(1599, 3, 24, 450, 0.187)
    assert around == pytest.approx(1599 / 26298 + 0.45 * 0.187)
    with pytest.raises(rl.InvalidConfigurationError, match="hours_per_day"):
        ownership_usd_per_hour(1599, 3, 25, 450, 0.187)
    with pytest.raises(rl.InvalidConfigurationError, match="lifetime_years"):
        ownership_usd_per_hour(1599, 0, 8, 450, 0.187)


@settings(max_examples=40, deadline=None)
@given(
    price=st.floats(0, 1e5),
    years=st.floats(0.1, 20),
    hours=st.floats(0.5, 24),
    watts=st.floats(0, 2000),
    kwh=st.floats(0, 1),
)
def test_ownership_cost_is_spread_purchase_plus_power(price, years, hours, watts, kwh):
    cost = ownership_usd_per_hour(price, years, hours, watts, kwh)
    # The whole lifetime of use pays back the purchase and the energy exactly.
    hours_of_use = years * 365.25 * hours
    assert cost * hours_of_use == pytest.approx(price + watts / 1000 * kwh * hours_of_use, rel=1e-9, abs=1e-9)
    assert ownership_usd_per_hour(price, years, hours * 0.5, watts, kwh) >= cost  # fewer hours, dearer hour


def test_an_owned_row_is_costed_from_its_purchase_price_and_the_assumptions():
    row = rl.get_price("rtx-4090-own")
    a = rl.ASSUMPTIONS
    hours = a["ownership_lifetime_years"].value * 365.25 * a["ownership_hours_per_day"].value
    watts = rl.get_gpu("rtx-4090").power_w * a["ownership_power_fraction"].value
    assert row.kind == "own" and row.purchase_usd == 1599
    expected = 1599 / hours + watts / 1000 * a["electricity_usd_per_kwh"].value
    assert row.usd_per_gpu_hour == pytest.approx(expected)
    # Renting one is listed too (rent vs own), and owning at 8 h a day is cheaper than renting it.
    rented = rl.get_price("runpod-rtx-4090-secure")
    assert rented.kind == "rent" and rented.usd_per_gpu_hour > row.usd_per_gpu_hour


def test_the_ownership_assumptions_next_to_a_price_table_are_the_ones_used(tables, monkeypatch):
    # A what-if folder with a longer lifetime: the owned hourly cost follows its own assumptions.
    row = 'id = "ownership_lifetime_years"\nvalue = '
    three = pricing.prices()["rtx-4090-own"].usd_per_gpu_hour
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(tables("assumptions.toml", row + "3\n", row + "6\n")))
    data.clear_cache()
    try:
        six = pricing.prices()["rtx-4090-own"].usd_per_gpu_hour
    finally:
        monkeypatch.undo()
        data.clear_cache()
    power = 0.45 * 0.187
    assert six - power == pytest.approx((three - power) / 2)


@pytest.mark.parametrize(
    ("old", "new", "field", "says"),
    [
        ('kind = "own"\npurchase_usd = 1599\n', 'kind = "own"\n', "purchase_usd", "missing"),
        (
            'kind = "own"\npurchase_usd = 1599\n',
            'kind = "own"\npurchase_usd = 1599\nusd_per_gpu_hour = 0.2\n',
            "usd_per_gpu_hour",
            "derived",
        ),
        ("usd_per_gpu_hour = 3.0\n", "", "usd_per_gpu_hour", "missing"),
        ("usd_per_gpu_hour = 3.0\n", "usd_per_gpu_hour = 3.0\npurchase_usd = 30000\n", "purchase_usd", "own"),
        ('kind = "own"\n', 'kind = "lease"\n', "kind", "expected one of 'rent', 'own'"),
        ("purchase_usd = 1599\n", "purchase_usd = -1599\n", "purchase_usd", "more than 0"),
    ],
)
def test_a_price_row_states_either_a_listed_price_or_a_purchase_price(tables, old, new, field, says):
    with pytest.raises(rl.DataTableError) as err:
        data.load_price_rows(tables("prices.toml", old, new))
    assert err.value.field == field and says in err.value.problem


@pytest.mark.parametrize("gpu", list(rl.gpus()), ids=str)
def test_every_scenario_is_priced_and_its_cost_is_computed(gpu):
    s = Scenario(gpu=gpu)  # before: "no price" for 22 of the 25 GPUs
    assert s.usd_per_gpu_hour == pricing.default_price(gpu).usd_per_gpu_hour
    assert s.price_id == pricing.default_price(gpu).id
    note = s.price_note
    assert s.price_id in note and (note.startswith("cost to own") == (gpu in OWNED))


def test_a_machine_the_tables_do_not_price_still_has_no_price(tmp_path, monkeypatch):
    # A saved (measured) machine has no price row: no cost until the learner types one.
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    (tmp_path / "gpus.toml").write_text(
        (ROOT / "data" / "gpus.toml").read_text().split("[[gpu]]")[0]
        + "[[gpu]]\n"
        + (ROOT / "data" / "gpus.toml")
        .read_text()
        .split("[[gpu]]")[1]
        .replace('id = "h100-sxm"', 'id = "my-box"', 1)
    )
    data.clear_cache()
    try:
        assert pricing.default_price("my-box") is None
        assert Scenario(gpu="my-box").usd_per_gpu_hour is None
    finally:
        monkeypatch.undo()
        data.clear_cache()


def test_cost_per_token_follows_the_gpus_own_price():
    # The SLO/cost comparison the issue asks for: every GPU priced, so $/Mtok compares across GPUs.
    costs = {}
    for gpu in ("h100-sxm", "h200", "b200", "mi300x", "rtx-4090"):
        s = Scenario(gpu=gpu, batch=8)
        tps = float(s.decode().tokens_per_s_total)
        costs[gpu] = float(rl.cost_per_million_tokens_usd(s.usd_per_gpu_hour, tps))
        assert math.isclose(costs[gpu], s.usd_per_gpu_hour / (tps * 3600) * 1e6)
    assert np.all(np.isfinite(list(costs.values())))
