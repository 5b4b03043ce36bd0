"""Declared argument constraints (issue 18): every rule a public function declares with ``@constrained``
rejects bad values (a fraction for a whole number, a value past a bound, NaN, text, a wrong option) with
an ``InvalidConfigurationError`` that names the parameter, through the real public function."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import roofline
from roofline._constraints import CONSTRAINED, Integer, Options, Real, check, constrained
from roofline.errors import InvalidConfigurationError


def _declared() -> list[tuple[str, str]]:
    """(function, parameter) for every rule declared in the library (every module imported first)."""
    for info in pkgutil.walk_packages(roofline.__path__, "roofline."):
        if not info.name.startswith("roofline.apps"):
            importlib.import_module(info.name)
    return [
        (name, param)
        for name, func in sorted(CONSTRAINED.items())
        if not name.startswith("roofline._constraints.")  # the module docstring's example
        for param in func.constraints
    ]


DECLARED = _declared()


def test_the_registry_holds_the_library_rules():
    declared = set(DECLARED)
    for expected in [
        ("roofline.physics.step.decode_step", "batch"),
        ("roofline.physics.step.forward_step", "num_gpus"),
        ("roofline.physics.step.forward_step", "parallelism"),
        ("roofline.physics.speculative.speculative_step", "draft_tokens"),
        ("roofline.lessons.serving.serve_one_at_a_time", "users"),
        ("roofline.lessons.ceilings.batch1_ceiling_table", "num_gpus"),
    ]:
        assert expected in declared
    assert len({name for name, _ in DECLARED}) >= 15


@pytest.mark.parametrize(
    ("function", "param"), DECLARED, ids=[f"{f.rsplit('.', 1)[1]}-{p}" for f, p in DECLARED]
)
def test_every_declared_rule_rejects_bad_values_naming_the_parameter(function, param):
    func = CONSTRAINED[function]
    rule = func.constraints[param]
    bad_values = rule.bad_values()
    assert len(bad_values) >= 2
    for bad in bad_values:
        # Only the bad argument is given: the check runs before the body, so it must be what fails.
        with pytest.raises(InvalidConfigurationError) as err:
            func(**{param: bad})
        message = str(err.value)
        assert message.startswith(f"{param} must be "), (bad, message)
        assert "got " in message, (bad, message)


def _good_value(rule):
    if isinstance(rule, Options):
        return rule.choices[0]
    low = rule.least if rule.least is not None else (rule.above + 1 if rule.above is not None else 0)
    high = rule.most if rule.most is not None else (rule.below - 1 if rule.below is not None else None)
    return low if high is None else min(low, high)


@pytest.mark.parametrize(
    ("function", "param"), DECLARED, ids=[f"{f.rsplit('.', 1)[1]}-{p}" for f, p in DECLARED]
)
def test_every_declared_rule_accepts_a_value_on_its_boundary(function, param):
    rule = CONSTRAINED[function].constraints[param]
    check(_good_value(rule), param, rule)


def test_decorated_functions_keep_their_signature_name_and_docstring():
    from roofline.physics.step import decode_step

    assert decode_step.__name__ == "decode_step" and "One decode step" in decode_step.__doc__
    assert list(inspect.signature(decode_step).parameters)[:4] == ["model", "gpu", "batch", "context_tokens"]


def test_arguments_are_checked_by_position_by_keyword_and_through_options():
    @constrained(batch=Integer(least=1), num_gpus=Integer(least=1))
    def f(model, batch=1, **options):
        return batch, options

    assert f("m", 4, num_gpus=2) == (4, {"num_gpus": 2})
    for call in (lambda: f("m", 2.5), lambda: f("m", batch=0), lambda: f("m", num_gpus=1.5)):
        with pytest.raises(InvalidConfigurationError):
            call()


def test_defaults_are_not_rechecked_and_unknown_parameters_fail_at_declaration():
    @constrained(batch=Integer(least=1))
    def f(batch=None):
        return batch

    assert f() is None  # the author's default: not re-checked
    with pytest.raises(TypeError, match="no parameter 'users'"):
        constrained(users=Integer(least=1))(lambda batch: batch)


def test_messages_name_the_rule_and_the_first_bad_element_of_an_array():
    with pytest.raises(
        InvalidConfigurationError, match=r"batch must be a whole number >= 1, got 2.5 \(at index 2"
    ):
        check(np.array([1, 2, 2.5, 0]), "batch", Integer(least=1))
    with pytest.raises(InvalidConfigurationError, match=r"acceptance must be >= 0 and <= 1, got 1.5$"):
        check(1.5, "acceptance", Real(least=0, most=1))
    with pytest.raises(InvalidConfigurationError, match=r"Did you mean 'pipeline'\?"):
        check("pipelin", "parallelism", Options("tensor", "pipeline"))
    with pytest.raises(InvalidConfigurationError, match="one whole number"):
        check([1, 2], "num_gpus", Integer(least=1, scalar=True))


@given(st.integers(-1000, 1000), st.integers(-5, 5), st.floats(0.01, 0.99))
def test_integer_accepts_whole_values_at_or_above_least_and_rejects_fractions(x, least, fraction):
    rule = Integer(least=least)
    if x >= least:
        assert check(x, "n", rule) == x
        assert check(float(x), "n", rule) == x  # 2.0 is a whole number
    else:
        with pytest.raises(InvalidConfigurationError):
            check(x, "n", rule)
    with pytest.raises(InvalidConfigurationError, match="whole number"):
        check(x + fraction, "n", rule)
    with pytest.raises(InvalidConfigurationError, match="whole number"):
        check([max(x, least), x + fraction], "n", rule)  # arrays: every element


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_scalars_and_arrays_get_the_same_verdict(x):
    rule = Real(above=0, most=1)

    def verdict(value):
        try:
            check(value, "x", rule)
        except InvalidConfigurationError:
            return False
        return True

    assert verdict(x) == verdict(np.array([x])) == (0 < x <= 1)
