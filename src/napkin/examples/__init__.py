"""The worked-example catalog: each row computed through the library beside its published value."""

from napkin.examples.catalog import EXAMPLES, Example, Row, find_example

__all__ = ["EXAMPLES", "Example", "Row", "find_example"]
