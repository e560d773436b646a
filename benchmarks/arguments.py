"""Command-line argument types the benchmark scripts share (no napkin import, so a script
comparing other trees runs even while this tree's package does not import)."""

import argparse


def whole_number(text: str) -> int:
    """A count >= 1 for argparse (a bad one is one usage line naming the argument, not a
    traceback)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return n


def non_negative(text: str) -> float:
    """A finite number >= 0 for argparse (a bad one is one usage line naming the argument)."""
    try:
        x = float(text)
    except ValueError:
        x = -1.0
    if not 0 <= x < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return x


def fraction(text: str) -> float:
    """A number in (0, 1] for argparse (a bad one is one usage line naming the argument)."""
    try:
        x = float(text)
    except ValueError:
        x = -1.0
    if not 0 < x <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return x
