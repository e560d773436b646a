"""A serving frontend that queues: the one process per replica that parses and tokenizes each
request before the engine sees it, detokenizes every output token before the client sees it and
finishes each response after its last token, one job at a time, first come first served.

The engine does not wait for it (vLLM V1's engine core, TensorRT-LLM's executor and SGLang's
scheduler run in their own processes), so it costs nothing while it keeps up. Once its work
rate nears the request rate it caps the replica: a request waits for the jobs ahead of it
before its prompt reaches the engine, and a token the engine has made waits for the
detokenization ahead of it before the client sees it. A closed loop of clients then settles at

    requests/s = 1 / (request_s + prompt_token_s × prompt + output_token_s × outputs
                      + response_s)

whatever the engine could do (the aiconfigurator sample's TensorRT-LLM 1.0 rows of
Llama-3.1-8B on H100 level off near 35–39 requests/s at TP 2, 4 and 8 alike and at 128 or 256
outputs, with TTFT 3–9× what the engine alone gives). ``response_s`` is work after the client
has its last token (the final response, usage, closing the stream): it delays no token of its
own request, only the jobs behind it.

Unlike ``frontend_ms`` and a profile's ``request_s`` (a fixed delay every request pays, which
never queues), this is a server: a job of ``w`` seconds handed to it at ``t`` ends at
``max(t, free) + w``, where ``free`` is when its previous job ended (:func:`served`).
"""

import math
from dataclasses import dataclass

from napkin.errors import require

FRONTEND_FIELDS = ("request_s", "prompt_token_s", "output_token_s", "response_s")
""":class:`Frontend`'s fields (seconds), as a profile file's ``frontend:`` keys them."""


@dataclass(frozen=True)
class Frontend:
    """Seconds of frontend work per request before the engine, per prompt token (tokenization),
    per output token (detokenization and streaming) and per response after its last token. All
    zero: no frontend queue."""

    request_s: float = 0.0
    prompt_token_s: float = 0.0
    output_token_s: float = 0.0
    response_s: float = 0.0

    def __post_init__(self) -> None:
        for name in FRONTEND_FIELDS:
            value = getattr(self, name)
            require(math.isfinite(value) and value >= 0,
                    f"frontend.{name}: must be finite and >= 0, got {value!r}")

    @property
    def active(self) -> bool:
        """Whether it does any work (else the simulator leaves it out)."""
        return bool(self.request_s or self.prompt_token_s or self.output_token_s
                    or self.response_s)

    def tokenize_s(self, prompt: float) -> float:
        """A request's job before the engine sees it: ``request_s + prompt_token_s × prompt``."""
        return self.request_s + self.prompt_token_s * prompt

    def requests_per_s(self, prompt: float, outputs: float) -> float:
        """The most requests a second it serves of ``prompt`` → ``outputs`` tokens (infinite
        when it does no work): the ceiling a replica cannot pass."""
        work = self.tokenize_s(prompt) + self.output_token_s * outputs + self.response_s
        return 1 / work if work > 0 else math.inf


def served(free_s: float, t: float, work_s: float) -> float:
    """When a job of ``work_s`` seconds handed at ``t`` to a server free from ``free_s`` ends:
    ``max(t, free_s) + work_s`` (first come first served, one job at a time)."""
    return (t if t > free_s else free_s) + work_s
