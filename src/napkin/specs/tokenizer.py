"""Token counts of a text under a real tokenizer: a Hugging Face ``tokenizer.json`` read with
the ``tokenizers`` library (the optional extra ``napkin[tokenize]``), offline.

Why it matters (question bank q1, q3): tokens, not characters, are what attention, the KV cache
and an API bill count, and a vocabulary learnt mostly on English splits other languages into
more tokens (the bank's paragraph: GPT-2 303 tokens in Russian against 53 in English). The
"a token is about 4 characters" rule was made for English.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from napkin.errors import NapkinError
from napkin.specs.files import read_user_text

if TYPE_CHECKING:
    from tokenizers import Tokenizer

CHARS_PER_TOKEN_RULE = 4.0
"""The English rule of thumb the bank warns about (q3): one token per 4 characters."""


@dataclass(frozen=True)
class TokenCount:
    """A text's length in tokens, Unicode characters and UTF-8 bytes under one tokenizer
    (``vocab_size`` tokens, special tokens included)."""

    num_tokens: int
    num_chars: int
    num_bytes: int
    vocab_size: int

    @property
    def chars_per_token(self) -> float:
        return self.num_chars / self.num_tokens if self.num_tokens else 0.0

    @property
    def bytes_per_token(self) -> float:
        return self.num_bytes / self.num_tokens if self.num_tokens else 0.0

    @property
    def rule_tokens(self) -> float:
        """Tokens by the 4-characters rule: ``chars / 4``."""
        return self.num_chars / CHARS_PER_TOKEN_RULE


def load_tokenizer(path: str | Path, field: str = "tokenizer") -> "Tokenizer":
    """The tokenizer of a ``tokenizer.json`` file; a missing library or an unreadable file is
    one :class:`NapkinError` naming ``field``."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise NapkinError(f"{field}: needs the tokenizers library, which is not installed; "
                          "pip install 'napkin[tokenize]'") from None
    text = read_user_text(path, field)
    try:
        return Tokenizer.from_str(text)
    except Exception as e:  # the library raises its own Exception subclass for any bad file
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise NapkinError(f"{field}: {str(path)!r} is not a tokenizer.json the tokenizers "
                          f"library reads ({first[:120]})") from None


def count_tokens(text: str, path: str | Path, field: str = "tokenizer") -> TokenCount:
    """Encode ``text`` with the tokenizer at ``path`` (no special tokens added: the text's own
    tokens) and count tokens, characters and UTF-8 bytes."""
    tok = load_tokenizer(path, field)
    ids = tok.encode(text, add_special_tokens=False).ids
    return TokenCount(num_tokens=len(ids), num_chars=len(text),
                      num_bytes=len(text.encode("utf-8")),
                      vocab_size=tok.get_vocab_size(with_added_tokens=True))
