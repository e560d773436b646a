"""Fixed-layout rows packed into a growing ``bytearray``, read back as numpy columns.

The simulator writes a row per finished request and per engine unit — millions of them. One
``struct`` call a row converts all its values in C (a typed-array append parses each value
through CPython's argument parser; a list of boxed numbers takes about four times the memory),
and the columns come back as strided views of the buffer, without a copy.
"""

import struct

import numpy as np

CODES = {"q": np.dtype("<i8"), "d": np.dtype("<f8")}
"""The ``struct`` codes a row may use and their numpy types (int64, float64; little-endian)."""


def packed_layout(columns: tuple[tuple[str, str], ...]) -> tuple[struct.Struct, np.dtype]:
    """The packed row of ``columns`` ((name, code) pairs, code ``q`` or ``d``; little-endian,
    no padding: 8 bytes a value) and the numpy record type that reads it back."""
    return (struct.Struct("<" + "".join(code for _, code in columns)),
            np.dtype([(name, CODES[code]) for name, code in columns]))


LOGGED = (("rid", "q"), ("label", "q"), ("engine", "q"), ("arrival_s", "d"),
          ("first_scheduled_s", "d"), ("first_token_s", "d"), ("finish_s", "d"),
          ("input_tokens", "q"), ("output_tokens", "q"), ("preemptions", "q"),
          ("queue_wait_s", "d"), ("cached_tokens", "q"))
"""The columns of a simulation's log (:class:`napkin.serving.simulate.SimRecords`): a
finished request's row, with the values' ``struct`` codes (``q``: int64, ``d``: float64)."""
ROW, ROW_DTYPE = packed_layout(LOGGED)
"""One finished request's row, packed (96 bytes), and its numpy record type."""


def merged_by_finish(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """Replicas' log rows (:data:`ROW_DTYPE`; each part one replica's, in its finishing order,
    its ``engine`` column set) merged by finishing time, and the permutation of the parts'
    concatenation that gives them. None where two replicas finish a request at the same
    instant: the event heap logs such ties in the order their units were queued, which a merge
    of separate runs cannot know (the caller runs the heap instead)."""
    rows = np.concatenate(parts)
    order = np.argsort(rows["finish_s"], kind="stable")
    rows = rows[order]
    finish, engine = rows["finish_s"], rows["engine"]
    if np.any((finish[1:] == finish[:-1]) & (engine[1:] != engine[:-1])):
        return None
    return rows, order
