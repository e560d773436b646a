"""The finished-request log: each request's twelve fields come back in their
:class:`SimRecords` column, integers as int64 and times as float64, in finishing order, with
NaN kept (a request never scheduled) and integers past 2³¹ intact."""

import math

import numpy as np

from napkin.serving.request import Request
from napkin.serving.simulate import ROW, ROW_DTYPE, Log, SimRecords


def _request(rid: int, arrival_s: float, prompt: int, max_out: int, label: int) -> Request:
    r = Request(rid, arrival_s, prompt, max_out, label)
    r.first_scheduled_s, r.first_token_s, r.finish_s = arrival_s + 0.5, arrival_s + 0.75, 9.25
    r.preemptions, r.queue_wait_s, r.hit_tokens = rid % 3, 0.125 * rid, 16 * rid
    return r


def test_the_log_returns_every_field_in_its_column():
    first, second = _request(7, 1.5, 512, 128, 1), _request(3, 2.0, 2**40, 2**33, 0)
    never = Request(11, 4.0, 8, 8, 2)  # never scheduled: its instants stay NaN
    log = Log()
    for r, engine in ((first, 0), (second, 2), (never, 1)):
        log.add(r, engine)
    rec = log.records()
    assert ROW.size == ROW_DTYPE.itemsize == 96  # 12 eight-byte values, no padding
    assert rec.rid.tolist() == [7, 3, 11] and rec.engine.tolist() == [0, 2, 1]
    assert rec.label.tolist() == [1, 0, 2]
    assert rec.input_tokens.tolist() == [512, 2**40, 8]
    assert rec.output_tokens.tolist() == [128, 2**33, 8]
    assert rec.arrival_s.tolist() == [1.5, 2.0, 4.0]
    assert rec.first_scheduled_s.tolist()[:2] == [2.0, 2.5]
    assert rec.first_token_s.tolist()[:2] == [2.25, 2.75]
    assert rec.finish_s.tolist()[:2] == [9.25, 9.25]
    assert all(math.isnan(getattr(rec, f)[2])
               for f in ("first_scheduled_s", "first_token_s", "finish_s"))
    assert rec.preemptions.tolist() == [1, 0, 0]
    assert rec.queue_wait_s.tolist() == [0.875, 0.375, 0.0]
    assert rec.cached_tokens.tolist() == [112, 48, 0]
    ints = ("rid", "label", "engine", "input_tokens", "output_tokens", "preemptions",
            "cached_tokens")
    for name in SimRecords.__dataclass_fields__:
        column = getattr(rec, name)
        if column is not None:
            assert column.dtype == (np.int64 if name in ints else np.float64), name
    assert rec.ttft_basis is None and rec.tpot_basis is None


def test_an_empty_log_has_empty_columns():
    rec = Log().records()
    assert len(rec.rid) == 0 and rec.rid.dtype == np.int64 and rec.finish_s.dtype == np.float64


def test_the_engine_series_holds_one_packed_row_a_unit():
    """One request of 100 prompt tokens and 3 outputs on an idle engine (blocks of 16): a
    prefill step (its first token; 100 computed tokens take ⌈100/16⌉ = 7 blocks), then one
    decode run of 2 steps that finishes it (contexts 100–101 fit the 7 blocks, freed at the
    finish). Two units, two rows:
    running 1 then 0, nothing waiting, 7 blocks then 0, the clock at the first token and the
    finish."""
    from napkin.accounting import Precision
    from napkin.catalog import load_accelerator, load_model
    from napkin.serving.arrivals import OpenLoop
    from napkin.serving.engine import SERIES, SERIES_DTYPE, Engine
    from napkin.serving.engine_spec import EngineSpec
    from napkin.serving.requests import RequestSet
    from napkin.serving.simulate import simulate
    from napkin.timing.efficiency import Efficiency

    engine = Engine(load_model("qwen3-8b"), load_accelerator("h100-sxm"), Precision.of(),
                    Efficiency(0.5, 0.8, 1e-3), EngineSpec(num_blocks=1000, block_size=16))
    rec = simulate([engine], OpenLoop(RequestSet.build([0.0], [100], [3]), (0,))).records
    assert SERIES.size == SERIES_DTYPE.itemsize == 32 and len(engine.series) == 2 * 32
    assert engine.num_units == 2
    assert engine.series_t.tolist() == [rec.first_token_s[0], rec.finish_s[0]]
    assert engine.series_running.tolist() == [1, 0]
    assert engine.series_waiting.tolist() == [0, 0]
    assert engine.series_blocks.tolist() == [7, 0]
    assert engine.series_t.dtype == np.float64 and engine.series_blocks.dtype == np.int64
