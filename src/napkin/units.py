"""Units: SI and IEC multiples and human-readable formatting.

GB, TB are powers of ten; KiB, MiB, GiB are powers of two. Everything inside napkin is in base
units (bytes, FLOPs, seconds, tokens); these helpers only convert at the edges.
"""

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KiB = 2**10
MiB = 2**20
GiB = 2**30
TFLOP = 1e12
MS = 1e-3
HOUR_S = 3600.0


def fmt_bytes(n_bytes: float, unit: str = "GB", digits: int = 2) -> str:
    """``n_bytes`` in ``unit`` (GB, GiB, MiB, KiB, MB, TB), e.g. ``15.14 GB``."""
    scale = {"B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": TB, "KiB": KiB, "MiB": MiB, "GiB": GiB}
    return f"{n_bytes / scale[unit]:,.{digits}f} {unit}"


def fmt_count(n: float, digits: int = 3) -> str:
    """A large count with an SI suffix: ``8.191 B`` for 8.19e9 (billions, not bytes)."""
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:,.{digits}f} {suffix}"
    return f"{n:,.0f}"


def fmt_flops(flops: float, digits: int = 3) -> str:
    """FLOPs (a count, not a rate) in the largest fitting SI unit: ``143.789 TFLOP``."""
    for suffix, scale in (("EFLOP", 1e18), ("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9)):
        if abs(flops) >= scale:
            return f"{flops / scale:,.{digits}f} {suffix}"
    return f"{flops:,.0f} FLOP"


def fmt_seconds(seconds: float, digits: int = 2) -> str:
    """A duration in ms below one second, in s above: ``22.89 ms``, ``1.25 s``."""
    if abs(seconds) < 1:
        return f"{seconds / MS:,.{digits}f} ms"
    return f"{seconds:,.{digits}f} s"
