"""The paged KV pool's block count stays equal to its definition through any sequence of
allocations, prefix hits, registrations and releases."""

from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.serving.kvpool import KVPool

ops = st.lists(st.tuples(st.sampled_from(["allocate", "register", "acquire", "release"]),
                         st.integers(0, 6), st.lists(st.integers(0, 9), max_size=4)),
               max_size=60)


@settings(max_examples=200, deadline=None)
@given(st.integers(4, 40), ops)
def test_used_blocks_follow_their_definition(num_blocks, steps):
    pool = KVPool(num_blocks, prefix_caching=True)
    held: list[tuple[int, list]] = []  # (private blocks, hashed keys) per holder
    for op, n, keys in steps:
        if op == "allocate" and pool.allocate(n):
            held.append((n, []))
        elif op == "register" and held and held[-1][0] >= len(keys):
            private, hashed = held.pop()
            done = pool.register(dict.fromkeys(keys))
            held.append((private - len(done), hashed + done))
        elif op == "acquire":
            hit = [k for k in dict.fromkeys(keys) if k in pool.refs]
            pool.acquire(hit)
            held.append((0, hit))
        elif op == "release" and held:
            private, hashed = held.pop(0)
            pool.release(private, hashed)
        assert pool.used == pool.private_used + len(pool.refs) - len(pool.evictable)
        assert 0 <= pool.used <= num_blocks
        assert pool.free == num_blocks - pool.used
