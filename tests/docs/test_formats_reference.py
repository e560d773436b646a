"""The file-format reference is generated from the pydantic models (``napkin.report.formats``,
written into the site by ``docs/hooks.py``): every model of every format is on it with its
fields, types, defaults and descriptions."""

import pytest

from napkin.report import formats as f
from napkin.serving.engine_config import EngineConfig
from napkin.serving.workload import ClosedLoopArrivals, Workload


def test_every_file_format_model_is_documented():
    """A new model in a file format (an ``InputModel`` subclass) must be reachable from a
    format's root, or it would be missing from the page."""
    assert f.undocumented_models() == []


def test_each_model_once_with_every_field():
    page = f.formats_markdown()
    for _, models in f.documented():
        for model in models:
            assert page.count(f"{{#{f.anchor(model)}}}") == 1, model
            section = page.split(f"{{#{f.anchor(model)}}}", 1)[1].split("\n### ", 1)[0]
            for name in model.model_fields:
                assert f"| `{name}` |" in section, (model, name)


def test_a_row_has_type_bounds_default_and_description():
    row = next(line for line in f.model_markdown(ClosedLoopArrivals).splitlines()
               if line.startswith("| `clients` |"))
    assert row == ("| `clients` | integer (≥ 1, ≤ 10^5) | *required* | Concurrent clients, at "
                   "most 100,000 (each holds a request in flight). |")
    engine = f.model_markdown(EngineConfig)
    assert '| `backend` | `"vllm"` or `"trtllm"` or `"sglang"` | `"vllm"` |' in engine
    assert "[DisaggConfig](#disaggconfig) or null" in engine


def test_unions_link_the_models_they_allow():
    text = f.type_text(Workload.model_fields["arrivals"].annotation)
    assert text.startswith("[WindowsArrivals](#windowsarrivals) or [PoissonArrivals]")


@pytest.mark.parametrize(("default", "text"), [(None, "`null`"), (True, "`true`"),
                                                ("auto", '`"auto"`'), (0.9, "`0.9`"),
                                                (8192, "`8192`"), (100_000, "`10^5`")])
def test_defaults_as_written_in_a_file(default, text):
    from pydantic.fields import FieldInfo

    assert f.default_text(FieldInfo(default=default)) == text


def test_trace_formats_come_from_the_reader():
    text = f.trace_formats_markdown()
    for fmt in ("azure", "burstgpt", "mooncake", "csv"):
        assert f"- `{fmt}`" in text


def test_every_field_has_a_description():
    """Each row's description cell is filled: a field whose docstring went missing (or sits
    below a validator, where it documents nothing) shows as an empty cell on the page."""
    empty = [(model.__name__, line.split("|")[1].strip())
             for _, models in f.documented() for model in models
             for line in f.model_markdown(model).splitlines()
             if line.startswith("| `") and line.rstrip().endswith("|  |")]
    assert empty == []
