"""A request as the engine tracks it (mutable, slotted: millions of them go through a run)."""

from collections.abc import Hashable

NAN = float("nan")


class Request:
    """Lengths, progress and the instants that define its latencies.

    ``computed`` counts tokens whose KV is in the cache; ``num_tokens`` = prompt + outputs so far.
    While decoding, ``computed`` and ``outputs`` are kept lazily as ``c0``/``o0`` at step ``s0``.
    ``transferred`` counts prompt tokens whose KV another engine computed and sent (a
    disaggregated decode pool admits them as computed). ``hash_key`` says how its blocks are
    named in the prefix cache: ``("src", ids, tokens)``
    for trace hash ids covering ``tokens`` each, ``("session", id)`` for a multi-turn session's
    history, ``("shared", group, tokens)`` for a shared system prompt, or None.
    """

    __slots__ = (
        "arrival_s", "basis_arrival", "basis_finish", "basis_first", "c0", "client", "computed",
        "enqueue_s", "finish_s", "first_scheduled_s",
        "first_token_s", "hash_key", "hashed", "hit_tokens", "label", "max_out", "o0",
        "outputs", "preemptions", "prompt", "queue_wait_s", "reserved", "rid", "s0",
        "transferred", "version",
    )

    def __init__(self, rid: int, arrival_s: float, prompt: int, max_out: int, label: int = 0,
                 hash_key: tuple[Hashable, ...] | None = None, client: int = -1) -> None:
        self.rid, self.arrival_s, self.prompt, self.max_out = rid, arrival_s, prompt, max_out
        self.label, self.hash_key, self.client = label, hash_key, client
        self.outputs = 0
        self.computed = 0
        self.hashed: list[Hashable] = []
        self.hit_tokens = 0
        self.preemptions = 0
        self.first_scheduled_s = NAN
        self.first_token_s = NAN
        self.finish_s = NAN
        self.enqueue_s = arrival_s
        self.queue_wait_s = 0.0
        self.c0 = self.s0 = self.o0 = 0
        self.version = 0
        self.reserved = 0
        self.transferred = 0
        """Prompt tokens whose KV arrived with the request (disaggregated decode)."""
        self.basis_arrival = self.basis_first = self.basis_finish = None

    @property
    def num_tokens(self) -> int:
        """Known tokens: the prompt and every output sampled so far."""
        return self.prompt + self.outputs
