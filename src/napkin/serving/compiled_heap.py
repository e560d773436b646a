"""The compiled core's finish heap: :mod:`heapq`'s algorithm over the rows of an array.

The core (:mod:`napkin.serving.compiled_core`) keeps the reference's heap of ``(step, request,
version)`` triples; held as the first ``count`` rows of an ``(capacity, 3)`` array, it lives in
the run's state between calls instead of being rebuilt as a list at each (a replica behind
least-outstanding routing runs one event a call: :mod:`napkin.serving.compiled_routing`).
:func:`push` and :func:`pop` are ``heapq.heappush``/``heappop`` (and ``_siftdown``/``_siftup``)
step for step, so the rows sit where the list's items would, and ties resolve alike: triples
compare in order, the step, then the request, then the version.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def _row(heap: np.ndarray, i: int) -> tuple[int, int, int]:
    """Row ``i`` as the triple it stands for (triples compare as tuples)."""
    return heap[i, 0], heap[i, 1], heap[i, 2]


@njit(cache=True)
def _sift_down(heap: np.ndarray, start: int, pos: int) -> None:
    """``heapq._siftdown``: the row at ``pos`` moves up towards ``start`` past larger
    parents."""
    a, b, c = _row(heap, pos)
    while pos > start:
        parent = (pos - 1) >> 1
        if (a, b, c) < _row(heap, parent):
            heap[pos] = heap[parent]
            pos = parent
            continue
        break
    heap[pos, 0], heap[pos, 1], heap[pos, 2] = a, b, c


@njit(cache=True)
def push(heap: np.ndarray, count: int, step: int, request: int, version: int
         ) -> tuple[np.ndarray, int]:
    """``heapq.heappush`` of ``(step, request, version)`` onto the first ``count`` rows (the
    array doubled when full): the array and the new count."""
    if count == heap.shape[0]:
        grown = np.empty((2 * count + 16, 3), np.int64)
        grown[:count] = heap[:count]
        heap = grown
    heap[count, 0], heap[count, 1], heap[count, 2] = step, request, version
    _sift_down(heap, 0, count)
    return heap, count + 1


@njit(cache=True)
def pop(heap: np.ndarray, count: int) -> tuple[int, int, int, int]:
    """``heapq.heappop`` from the first ``count`` rows (at least one): the new count and the
    smallest triple."""
    count -= 1
    a, b, c = _row(heap, count)  # the last row
    if count == 0:
        return count, a, b, c
    top0, top1, top2 = _row(heap, 0)
    heap[0, 0], heap[0, 1], heap[0, 2] = a, b, c
    pos, child = 0, 1  # heapq._siftup: the smaller child rises until a leaf, then sift down
    while child < count:
        right = child + 1
        if right < count and not _row(heap, child) < _row(heap, right):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos, 0], heap[pos, 1], heap[pos, 2] = a, b, c
    _sift_down(heap, 0, pos)
    return count, top0, top1, top2
