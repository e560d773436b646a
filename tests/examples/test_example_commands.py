"""Every worked example is also a set of commands a user can rerun with other inputs: each
command of :data:`napkin.examples.commands.COMMANDS` runs, and every row of the example is
either printed by them (at the row's unit scale) or listed in ``DERIVED`` with the arithmetic
that gets it from what they print — no row is reproduced only by the stored example."""

import json
import shlex

import pytest
from rowmatch import numbers, reproduced

from napkin.examples.catalog import EXAMPLES
from napkin.examples.commands import COMMANDS, DERIVED

IDS = [e.id for e in EXAMPLES]


def test_every_example_has_commands():
    assert sorted(COMMANDS) == sorted(IDS)
    assert all(COMMANDS[i] for i in IDS), [i for i in IDS if not COMMANDS[i]]
    assert set(DERIVED) <= set(IDS)


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_commands_print_every_row(example, cli):
    found: list[float] = []
    for line in COMMANDS[example.id]:
        argv = shlex.split(line)
        assert argv[0] == "napkin"
        code, out, err = cli(*argv[1:], "--format", "json")
        assert code == 0, (line, err)
        found += numbers(json.loads(out))
    derived = DERIVED.get(example.id, {})
    rows = example.rows()
    assert set(derived) <= {r.label for r in rows}
    missing = [f"{r.label} = {r.value:.6g} {r.unit}" for r in rows
               if r.label not in derived and not reproduced(r.value, found)]
    assert not missing, missing


def test_row_matching_scales():
    """A figure printed in GB/ms/% is found in JSON's base units, and nothing else is."""
    assert reproduced(16.38, [16.38e9])  # GB → bytes
    assert reproduced(10.0, [10 * 2**30])  # GiB → bytes
    assert reproduced(22.85, [0.02285])  # ms → s
    assert reproduced(50.78, [0.5078])  # % → fraction
    assert reproduced(125.7, [125.7 * 3600])  # GPU-h → GPU-s
    assert not reproduced(16.38, [16.4e9, 1.638e4 + 1])
    assert reproduced(0.0, [0.0]) and not reproduced(0.0, [1.0])
