"""A paged KV pool: blocks of ``block_size`` tokens, with optional prefix caching.

Counts, not block ids: a request holds ``ceil(computed_tokens / block_size)`` blocks, of which
the hashed ones (prefix-cache entries) are shared and reference-counted. With prefix caching,
a block whose last user finishes stays cached but evictable (it counts as free); allocation
takes never-cached free blocks first and then evicts cached ones least-recently-freed first.
(vLLM v1 keeps one LRU free queue for both kinds; taking uncached ones first can only keep more
hits, so hit rates here are an upper bound of vLLM's for the same pool — a deliberate
simplification that keeps allocation O(1).)

A host tier (``host_blocks`` > 0: vLLM's KV offloading to CPU memory, LMCache, SGLang's
HiCache) keeps the cached blocks the GPU evicts, least recently stored first out when it is
full; a prefix lookup continues into it past the GPU's hits (:meth:`KVPool.host_hits`), and a
request loads those blocks back into fresh GPU blocks (the engine times the copy).
"""

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence

from napkin.errors import require


class KVPool:
    """Block accounting of one engine's KV cache."""

    def __init__(self, num_blocks: int, prefix_caching: bool = False,
                 host_blocks: int = 0) -> None:
        require(num_blocks >= 1, f"kv pool: needs at least one block, got {num_blocks}")
        self.num_blocks = num_blocks
        self.prefix_caching = prefix_caching
        self.host_blocks = host_blocks
        self.host: OrderedDict[Hashable, None] = OrderedDict()  # offloaded blocks, LRU first
        self.private_used = 0  # blocks held by requests, not in the prefix cache
        self.refs: dict[Hashable, int] = {}  # cached block -> requests holding it
        self.evictable: OrderedDict[Hashable, None] = OrderedDict()  # cached, refcount 0
        self.used = 0
        """Blocks held by running requests, ``private_used + len(refs) − len(evictable)``
        (cached-but-evictable blocks count as free), kept up to date by every change."""

    @property
    def free(self) -> int:
        return self.num_blocks - self.used

    def allocate(self, n: int) -> bool:
        """Take ``n`` private blocks if that many are free (evicting cached ones as needed)."""
        if n > self.num_blocks - self.used:
            return False
        if self.refs:  # evict cached blocks past the never-cached free ones
            spare = self.num_blocks - self.private_used - len(self.refs)
            for _ in range(n - spare):
                key, _ = self.evictable.popitem(last=False)
                del self.refs[key]
                if self.host_blocks:
                    self._offload(key)
        self.private_used += n
        self.used += n
        return True

    def release(self, private: int, hashed: Sequence[Hashable] = ()) -> None:
        """A request lets go of ``private`` blocks and its hashed ones (tail first, so the tail
        of a prompt is evicted before its head, as vLLM frees)."""
        self.private_used -= private
        self.used -= private
        if not hashed:
            return
        for key in reversed(list(hashed)):
            count = self.refs[key] - 1
            self.refs[key] = count
            if count == 0:
                self.evictable[key] = None
                self.used -= 1

    def hits(self, keys: Iterable[Hashable]) -> int:
        """Length of the leading run of ``keys`` present in the cache."""
        n = 0
        for key in keys:
            if key not in self.refs:
                break
            n += 1
        return n

    def _offload(self, key: Hashable) -> None:
        """Keep an evicted block in the host tier (the least recently stored one leaves a full
        tier)."""
        host = self.host
        host[key] = None
        host.move_to_end(key)
        if len(host) > self.host_blocks:
            host.popitem(last=False)

    def host_hits(self, keys: Iterable[Hashable]) -> int:
        """Length of the leading run of ``keys`` in the host tier (the lookup past the GPU's
        hits)."""
        n = 0
        for key in keys:
            if key not in self.host:
                break
            n += 1
        return n

    def load(self, keys: Iterable[Hashable]) -> None:
        """Host blocks copied back to the GPU: refreshed as recently used (the host keeps its
        copy)."""
        for key in keys:
            self.host.move_to_end(key)

    def acquire(self, keys: Iterable[Hashable]) -> None:
        """Reference cached blocks (a prefix hit); evictable ones become used again."""
        for key in keys:
            self.refs[key] += 1
            if key in self.evictable:
                del self.evictable[key]
                self.used += 1

    def register(self, keys: Iterable[Hashable]) -> list[Hashable]:
        """Turn private blocks of computed content into cache entries the request holds;
        returns the keys registered (a key cached already stays private: a duplicate)."""
        done = []
        for key in keys:
            if key in self.refs:
                continue
            self.refs[key] = 1
            self.private_used -= 1
            done.append(key)
        return done
