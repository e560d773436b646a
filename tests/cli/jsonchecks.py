"""Checks shared by the CLI fuzz suites."""

import math


def assert_finite(doc: object) -> None:
    """Every number of a JSON document is finite (None stands for "not measured")."""
    if isinstance(doc, dict):
        for v in doc.values():
            assert_finite(v)
    elif isinstance(doc, list):
        for v in doc:
            assert_finite(v)
    elif isinstance(doc, float):
        assert math.isfinite(doc), doc
