"""The scheduler reproduces the pinned runs (:mod:`pinned`) bit for bit: records and every
engine's observable state over 700 random scenarios and tiny preempting pools."""

import json

import pytest
from pinned import FILE, run

PINNED = json.loads(FILE.read_text())


@pytest.mark.parametrize("key", sorted(PINNED))
def test_a_pinned_run_is_reproduced(key):
    assert run(key) == PINNED[key]
