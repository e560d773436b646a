"""The API fuzzed through its signatures: every public function of ``napkin.__all__`` called
with odd values in its keyword arguments (wrong types, non-finite and huge numbers, empty and
nested containers) answers a :class:`~napkin.Result` with finite JSON or raises one
:class:`~napkin.errors.NapkinError` naming an argument — never another exception, never a hang
past :data:`CALL_S`.

A small budget runs by default (:data:`QUICK` examples a function); ``pytest -m slow`` runs
:data:`LONG`.
"""

import inspect
import math
import resource
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from jsonchecks import assert_finite

import napkin
from napkin.errors import NapkinError

QUICK, LONG = 6, 150
CALL_S = 20
"""Wall-clock bound of one call."""
MEMORY_BYTES = 8 * 2**30
"""Address space a call may reach (the test process's own included)."""

ODD = [None, 0, -1, 1, 2, 1.5, -0.5, "16", "", "x", True, False, math.nan, math.inf, -math.inf,
       10**400, -(10**30), 2**53, 2**31, 5e-324, 1e308, [], [1, "a"], [0], [math.nan], {}, {"a": 1},
       "qwen3-0.6b", "h100-sxm", "nope.yaml", "/dev/zero", b"bytes", (1, 2), object()]
"""Values every argument is tried with."""

REQUIRED = {"model": "qwen3-0.6b", "ref": "qwen3-0.6b", "gpu": "h100-sxm",
            "new": 16, "target_loss": 2.5, "sizes": [1e9, 4e9]}
"""A plausible value for a required argument of these names (others get an odd value)."""

SLOW_BY_DEFAULT = {"run_examples", "calibrate", "validate", "plan", "sweep", "simulate"}
"""Functions whose defaults start real work (a fit, every worked example, a search): always
called with at least one odd argument, never with a default's own value."""
BASE = {"validate": {"sets": "nope.csv"}, "run_examples": {"ids": "nope"}}
"""Arguments these functions are called with unless the draw replaces them: whatever else is
odd, a valid rest would otherwise replay every shipped measurement or worked example."""

FUNCTIONS = sorted(n for n in napkin.__all__ if n not in ("Result", "__version__"))


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise _Timeout


@pytest.fixture(autouse=True)
def _no_files_left(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # any export a call writes lands here


def _check(name: str, kwargs: dict) -> None:
    fn = getattr(napkin, name)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CALL_S)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # a call that allocates past MEMORY_BYTES fails here (MemoryError), not the machine
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, hard))
    try:
        result = fn(**kwargs)
    except MemoryError:
        pytest.fail(f"napkin.{name}(**{kwargs!r}) allocated past {MEMORY_BYTES / 2**30:g} GiB")
    except NapkinError as e:
        text = str(e)
        assert text and "\n" not in text and "Traceback" not in text, (name, kwargs, text)
        return
    except _Timeout:
        pytest.fail(f"napkin.{name}(**{kwargs!r}) ran past {CALL_S} s")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    data = result.data if hasattr(result, "data") else None
    if data is not None:
        assert_finite(data)


def _kwargs(name: str, data: st.DataObject) -> dict:
    sig = inspect.signature(getattr(napkin, name))
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    kwargs = dict(BASE.get(name, {}))
    for p in params:
        if p.default is inspect.Parameter.empty:
            kwargs[p.name] = (REQUIRED[p.name] if p.name in REQUIRED and data.draw(st.booleans())
                              else data.draw(st.sampled_from(ODD)))
    optional = [p.name for p in params if p.default is not inspect.Parameter.empty]
    if optional:
        chosen = data.draw(st.lists(st.sampled_from(optional), min_size=0 if name not in
                                    SLOW_BY_DEFAULT else 1, max_size=3, unique=True))
        for k in chosen:
            default = sig.parameters[k].default
            odd = [v for v in ODD if not (name in SLOW_BY_DEFAULT and _same(v, default))]
            kwargs[k] = data.draw(st.sampled_from(odd))
    return kwargs


def _same(value: object, default: object) -> bool:
    """Whether ``value`` is the argument's default (the real work a default starts)."""
    try:
        return value is default or (type(value) is type(default) and value == default)
    except Exception:
        return False


@pytest.mark.parametrize("name", FUNCTIONS)
@settings(max_examples=QUICK, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_api_quick(name, data):
    _check(name, _kwargs(name, data))


@pytest.mark.slow
@pytest.mark.parametrize("name", FUNCTIONS)
@settings(max_examples=LONG, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_api_long(name, data):
    _check(name, _kwargs(name, data))
