"""The declaration (``jaxpriv.declare``): every built-in's ``Spec`` is what it was before the declaration filled it."""

from __future__ import annotations

import json

import pytest

from tests.engine._static_cases import EXPECTED, cases, describe

_EXPECTED = json.loads(EXPECTED.read_text())


@pytest.mark.parametrize("label", sorted(_EXPECTED))
def test_spec_static_frozen(label: str) -> None:
    """Name, params class, privacy, arms, ndims and ``Spec.static`` (values and order) equal the frozen table."""
    spec = cases()[label]().spec
    assert describe(spec) == _EXPECTED[label]


def test_every_case_is_frozen() -> None:
    assert sorted(cases()) == sorted(_EXPECTED)
