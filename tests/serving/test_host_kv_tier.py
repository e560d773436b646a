"""A host KV tier behind the prefix cache: evicted blocks kept in host memory, loaded back on a
hit, the load timed; worked by hand on tiny pools."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stepping import Stepper

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.kvpool import KVPool
from napkin.serving.request import Request
from napkin.timing.efficiency import Efficiency


def test_the_host_tier_keeps_what_the_gpu_evicts_least_recent_first_out():
    """A pool of 2 blocks and a host tier of 2: three cached blocks evicted in turn leave the
    last two in the host; a lookup runs as far as the keys are there; a load refreshes them."""
    pool = KVPool(2, prefix_caching=True, host_blocks=2)
    for key in ("a", "b", "c"):
        assert pool.allocate(1)
        pool.register([key])
        pool.release(0, [key])  # cached, evictable
        pool.allocate(2)  # evicts every cached block to the host
        pool.release(2)
    assert list(pool.host) == ["b", "c"]  # "a" stored first, out first
    assert pool.host_hits(["b", "c", "a"]) == 2 and pool.host_hits(["a", "b"]) == 0
    pool.load(["b"])
    assert list(pool.host) == ["c", "b"]


def _engine(num_blocks: int, host_blocks: int, gbs: float = 10.0) -> Engine:
    return Engine(load_model("qwen3-0.6b"), load_accelerator("l4"), Precision.of(),
                  Efficiency(0.4, 0.5, 0.0),
                  EngineSpec(num_blocks=num_blocks, max_num_batched_tokens=256, max_num_seqs=4,
                             enable_prefix_caching=True, mode="exact",
                             host_kv_blocks=host_blocks, host_kv_bytes_per_s=gbs * 1e9))


def test_a_prefix_evicted_to_the_host_is_loaded_back_and_timed():
    """Qwen3-0.6B (28 layers, 8 KV heads of 128, BF16: 28 · 2 · 8 · 128 · 2 B = 114,688 B a
    token), block size 16, 12 GPU blocks. A: a 64-token shared prefix + 16 of its own (5
    blocks), one token out. B (no prefix, a 191-token prompt: 12 blocks) then evicts A's 4
    cached prefix blocks. C, with A's prefix: no GPU hit; with a host tier the 4 blocks (64
    tokens) are loaded — 4 · 16 · 114,688 B = 7.34 MB at 10 GB/s = 0.734 ms added to C's first
    step — and only its last 16 tokens are prefilled; without one it prefills all 80."""
    kv_token = 28 * 2 * 8 * 128 * 2
    assert load_model("qwen3-0.6b").kv_bytes_per_token(2) == kv_token
    times = {}
    for host in (0, 16):
        e = _engine(12, host)
        stepper = Stepper(e)
        stepper.add(Request(0, 0.0, 80, 1, hash_key=("shared", "p", 64)), 0.0)
        stepper.run()
        stepper.add(Request(1, e.clock, 191, 1), e.clock)
        stepper.run()
        stepper.add(Request(2, e.clock, 80, 1, hash_key=("shared", "p", 64)), e.clock)
        stepper.step()  # (woken: plans C's first step)
        plan = e.plan
        assert plan is not None and len(plan.chunks) == 1
        (req, new), = plan.chunks
        times[host] = plan.series.time(1)
        assert new == (16 if host else 80)
        assert e.host_loaded_blocks == (4 if host else 0)
        assert e.host_load_s == pytest.approx(4 * 16 * kv_token / 10e9 if host else 0.0)
        stepper.step()
        assert req.hit_tokens == (64 if host else 0)
    assert 4 * 16 * kv_token / 10e9 == pytest.approx(0.734e-3, rel=1e-3)
    assert times[16] > 4 * 16 * kv_token / 10e9  # the load is in C's first step


@settings(max_examples=25, deadline=None)
@given(blocks=st.integers(6, 40), host=st.integers(0, 64),
       lengths=st.lists(st.tuples(st.integers(1, 200), st.integers(1, 40),
                                  st.integers(0, 3)), min_size=1, max_size=12))
def test_hits_never_exceed_the_prompt(blocks, host, lengths):
    """Whatever the pool, host tier and requests (prompts over 4 shared prefixes of 32–128
    tokens), a request's hits are at most its prompt and the hit share of all input at most 1."""
    e = _engine(blocks, host)
    stepper = Stepper(e)
    reqs = []
    t = 0.0
    for i, (prompt, out, group) in enumerate(lengths):
        prompt = min(prompt, blocks * 16 - out)
        if prompt < 1:
            continue
        r = Request(i, t, prompt, out, hash_key=("shared", group, 32 * (group + 1)))
        reqs.append(r)
        stepper.add(r, t)
        t += 0.01
    stepper.run()
    assert all(r.hit_tokens <= r.prompt for r in reqs)
    assert sum(r.hit_tokens for r in reqs) <= sum(r.prompt for r in reqs)


def test_a_host_tier_needs_prefix_caching():
    with pytest.raises(NapkinError, match="kv_offload"):
        EngineSpec(num_blocks=10, host_kv_blocks=4)
