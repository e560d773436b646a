"""The scheduler reproduces the pinned runs (:mod:`pinned`) bit for bit: records and every
engine's observable state over 800 runs (400 random scenarios, 100 more with a frontend queue
and async scheduling, 300 tiny preempting pools), run by ``process`` itself and by its variants
compiled for each run's features (:mod:`napkin.serving.specialise`)."""

import json

import pytest
from pinned import FILE, run

from napkin.serving import specialise

PINNED = json.loads(FILE.read_text())


@pytest.mark.parametrize("compiled", [False, True], ids=["process", "compiled"])
@pytest.mark.parametrize("key", sorted(PINNED))
def test_a_pinned_run_is_reproduced(key, compiled, monkeypatch):
    monkeypatch.setattr(specialise, "SPECIALISE_AFTER", 0 if compiled else 10**18)
    monkeypatch.setattr(specialise, "CACHE", None)  # (no variant from an earlier process)
    assert run(key) == PINNED[key]
