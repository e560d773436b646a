"""Tokenizers shipped with the catalog (``catalog/tokenizers/``, sources in its SOURCES.md)."""

from pathlib import Path

from napkin.catalog import CATALOG_DIR
from napkin.errors import NapkinError

TOKENIZERS = ("gpt2",)
"""Shipped tokenizer ids: GPT-2's byte-level BPE (50,257 tokens)."""


def tokenizer_path(ref: str) -> Path:
    """The ``tokenizer.json`` of a shipped id, or ``ref`` itself as a path; anything else is
    refused naming the ids."""
    if ref in TOKENIZERS:
        return CATALOG_DIR.joinpath("tokenizers", f"{ref}.json")
    path = Path(ref)
    if path.is_file():
        return path
    raise NapkinError(f"tokenizer: {ref!r} is neither a shipped tokenizer "
                      f"({', '.join(TOKENIZERS)}) nor a tokenizer.json file")
