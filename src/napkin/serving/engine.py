"""A discrete-event model of one inference engine, with vLLM v1's scheduler as the reference:
the engine's state and the policies' small rules; the scheduling algorithm that runs them is
:mod:`napkin.serving.scheduler`.

Token-centric, as vLLM v1: each request has ``num_tokens`` (prompt + outputs so far) and
``computed`` tokens in the KV cache; each step assigns new tokens so computed catches up, which
covers chunked prefill, prefix hits and recompute after preemption with one rule. Per step:

1. decode-phase running requests get one token each ("decodes first", as the issue asks; vLLM
   v1 walks ``running`` in admission order instead); if their new blocks do not fit, the most
   recently admitted running request is preempted (KV freed, computed reset, put back at the
   head of the waiting queue: recompute mode) until they do;
2. partial prefills continue in admission order within the token budget; a chunk whose blocks
   do not fit preempts later-admitted, not-yet-scheduled requests, else waits;
3. if nothing was preempted, waiting requests are admitted first-come-first-served while a
   sequence slot, token budget and blocks last (prefix-cache hits skip computed blocks).

The step's time comes from a timer fed the accounting layer's FLOPs and bytes of its batch
(decode tokens at their contexts and prefill chunks), split into dense and attention FLOPs and
weight and KV bytes: the roofline at MFU/MBU over ``tensor_parallel`` devices plus ring
all-reduces and a per-step overhead (:class:`napkin.timing.steps.RooflineTimer`), or a fitted
calibration profile (:class:`napkin.calibration.basis.FittedTimer`). With ``record`` the engine
also sums each step's basis terms (:class:`napkin.calibration.basis.StepBasis`) and stamps
every request with the running sum at its arrival, first token and finish, so a request's TTFT
and TPOT are linear in the coefficients for the schedule simulated (what calibration fits).

Fast mode advances a run of identical-composition decode steps at once (DESIGN.md): while
every running request decodes and nothing can be admitted, step j of the run costs FLOPs and
bytes affine in j, so k steps take a closed-form time. A run stops at the first completion,
the first step whose new blocks would not fit, and (sliding-window models) where a context
reaches its window; an arrival routed to a busy engine truncates the run at the next step
boundary. Exact mode runs one step at a time and costs each step with ``forward`` on the
explicit batch; tests check both give the same per-request times.

Static batching (``batching: static``, for comparison with the continuous batching above): a
batch forms from the waiting queue once the engine is empty, taking requests until the queue
is empty, the ``max_num_seqs`` slots are full or the KV pool is short (a step's token budget
only spreads its prefill over steps); later arrivals wait for the next batch, which forms once
every request of this one has finished, so a slot whose request finished early idles until
the longest one ends. Every engine counts its busy
slot-steps (sequences computed per step, summed over steps): slot use = slot-steps /
(``max_num_seqs`` × steps).
"""

from collections import deque
from typing import NamedTuple

import numpy as np

from napkin.accounting.batch import Batch, Segment
from napkin.accounting.forward import Precision, forward
from napkin.accounting.linear import LinearCost, replicated_extra, tp_cost, with_replicated
from napkin.calibration.basis import TERMS, LayoutBasis, Parts, StepBasis
from napkin.errors import NapkinError, require
from napkin.serving.engine_spec import EngineSpec, StepTimer, roofline_timer
from napkin.serving.kvpool import KVPool
from napkin.serving.policy import policy
from napkin.serving.request import Request
from napkin.serving.rows import packed_layout
from napkin.serving.speculative import SpeculativeCost, SpeculativeTimer
from napkin.serving.step import Plan, StepShape
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.timing.efficiency import Efficiency
from napkin.timing.layout import LayoutTimer
from napkin.timing.series import StepSeries

RATIO_RECHECK_STEPS = 32
"""SGLang policy: a decode run with requests waiting re-checks admission this often."""
SERIES_COLUMNS = (("t_s", "d"), ("blocks", "q"), ("running", "q"), ("waiting", "q"))
"""An engine's series after each unit, one packed row (:mod:`napkin.serving.rows`, 32 bytes):
the clock, KV blocks in use, running and waiting requests."""
SERIES, SERIES_DTYPE = packed_layout(SERIES_COLUMNS)


class PrefixHits(NamedTuple):
    """A prefix-cache lookup (:meth:`Engine._prefix_hits`): the request's block keys, the
    leading blocks cached on the GPU and past them in the host tier, the tokens they cover,
    and how many of the GPU's are evictable (counted as free until taken)."""

    keys: list
    gpu_blocks: int
    host_blocks: int
    cached_tokens: int
    evictable: int


class Engine:
    """One engine replica: waiting queue, running set, KV pool, clock."""

    def __init__(self, model: ModelSpec, acc: Accelerator, precision: Precision,
                 eff: Efficiency, spec: EngineSpec, name: str = "engine-0",
                 timer: StepTimer | None = None, record: bool = False,
                 basis: StepBasis | LayoutBasis | None = None) -> None:
        self.model, self.acc, self.precision, self.eff, self.spec = model, acc, precision, eff, spec
        self.name = name
        compute = precision.weights.compute
        self.timer: StepTimer = timer or roofline_timer(model, acc, precision, eff, spec)
        self.basis = (basis or StepBasis.of(model, acc, compute, spec.tensor_parallel,
                                            spec.allreduce_bytes_per_s,
                                            precision.weights.weight_only,
                                            precision)) if record else None
        """With ``record``: the basis each step's terms are summed in (``basis``: a layout's,
        :class:`LayoutBasis`; default the tensor-parallel group's)."""
        self.basis_sum = np.zeros(len(TERMS)) if record else None
        replicated_over = (self.timer.cost.layout.attention_tp
                           if isinstance(self.timer, LayoutTimer) else spec.tensor_parallel)
        self.cost: LinearCost | SpeculativeCost = tp_cost(model, precision,
                                                           spec.tensor_parallel, replicated_over)
        self.replicated = replicated_extra(model, precision, replicated_over)
        """What ``cost`` adds for the linears each attention rank runs whole (exact mode adds it
        to ``forward``'s parts: :func:`~napkin.accounting.linear.with_replicated`)."""
        if spec.speculative is not None:
            require(spec.mode == "fast" and not record,
                    "speculative: runs in engine.mode fast, without recording a basis")
            self.cost = SpeculativeCost(self.cost, spec.speculative)
            self.timer = SpeculativeTimer(self.timer, spec.speculative)
        self.windows = list(model.cost_windows)
        self.dp = self.timer.cost.layout.attention_dp if isinstance(self.timer, LayoutTimer) \
            else 1
        """Data-parallel attention groups stepping in lock-step (1: none, or a timer that does
        not split the step by rank)."""
        self.bs = spec.block_size
        self.policy = policy(spec.backend)
        self.reserve_all = (self.policy.reservation == "max_length"
                            and spec.capacity_scheduler != "max_utilization")
        # the spec's and policy's switches the hot paths read, looked up once
        self.ratio = self.policy.reservation == "ratio"  # SGLang's admission by ratio
        self.full_prompt = self.policy.full_prompt_gate and spec.reserve_full_prompt
        self.fast = spec.mode == "fast"
        self.caching = spec.enable_prefix_caching
        self.clip = self.policy.clip_max_new_tokens
        self.static = spec.batching == "static"
        self.batch_open = True
        """Static batching: requests may still join the current batch (none of it has produced
        a token yet)."""
        self.ratio_reset_step = 0
        self.pool = KVPool(spec.num_blocks, self.caching, spec.host_kv_blocks)
        self.clock = 0.0
        self.steps = 0
        self.waiting: deque[Request] = deque()
        self.inbox: deque[Request] = deque()  # arrived, not yet taken in (recv interval)
        self.recv_interval = spec.scheduler_recv_interval
        self.since_poll = self.recv_interval  # decode steps since the scheduler last looked
        self.batch_waiting = (spec.batch_wait_timeout_iters > 0
                              or spec.batch_wait_max_tokens_ratio > 0)
        self.adp_balance = self.dp > 1 and spec.attention_dp_timeout_iters > 0
        self.batch_wait = self.batch_waiting or self.adp_balance  # TensorRT-LLM may hold prompts
        self.held_steps = 0  # steps prompts have been held back (TensorRT-LLM batch waiting)
        self.holding = False  # the planned unit holds prompts back
        self.hold_left = 0  # … for at most this many steps
        self.batch_held = False  # … by batch waiting (its count runs only then)
        self.adp_anchor = 0  # the engine step at which the balancer's count last restarted
        self.adp_batched = 0  # steps held to gather prompts on every rank (batching_wait_iters)
        self.adp_batching = False
        f = spec.frontend if spec.frontend is not None else self.timer.frontend
        self.frontend = f if f is not None and f.active else None
        self.tokenizing: deque[tuple[float, Request]] = deque()
        """Requests in the frontend queue, with the instant each reaches the engine (in order)."""
        self.frontend_free_s = 0.0  # when the frontend's last job handed to it ends
        self.frontend_busy_s = 0.0  # the frontend's work so far, seconds
        self.lagging = spec.async_scheduling
        self.retiring: list[Request] = []
        """Async scheduling: requests that finished in the last unit, whose blocks and slots
        the scheduler frees once it has planned the next."""
        self.running: dict[int, Request] = {}  # admission order
        self.prefilling: dict[int, Request] = {}
        self.decoding: dict[int, Request] = {}
        self.dec_base = 0  # Σ (c0 − s0) over decoding requests: Σ contexts = base + n·steps
        self.dec_left = 0  # Σ (max_out − o0 + s0): Σ outputs left = dec_left − n·steps
        self.dec_over_clip = 0  # decoding requests whose outputs left exceed the policy's clip
        self.residues = [0] * self.bs
        self.finish_heap: list[tuple[int, int, int, Request]] = []
        self.plan: Plan | None = None
        """The unit in flight, once a run has stopped (while one runs, the scheduler holds it)."""
        self.arriving: tuple[float, Request] | None = None
        """A request reaching the engine at an instant (what the scheduler is handed with
        :data:`~napkin.serving.scheduler.ARRIVED`)."""
        self.kv_token_seconds = 0.0
        self.peak_blocks = 0
        self.busy_s = 0.0
        self.num_steps = 0
        self.slot_steps = 0
        """Σ over steps of the sequences the step computes (decodes + prefill chunks)."""
        self.preemptions = 0
        self.series = bytearray()
        """After every unit, one :data:`SERIES` row: the clock, blocks in use, running and
        waiting requests (32 bytes a unit; read as columns by :attr:`series_t` and the rest)."""
        self.kv_bytes_per_token = model.kv_bytes_per_token(precision.kv.bytes_per_element)
        self.host_block_s = (self.kv_bytes_per_token * self.bs
                             / model.kv_devices(spec.tensor_parallel)
                             / (spec.host_kv_bytes_per_s or acc.host_load_bytes_per_s))
        """Seconds a device takes to load one block of its share of the KV from the host tier."""
        self.host_loaded_blocks = 0
        self.host_load_s = 0.0
        self.loading_s = 0.0  # host loads of the unit being planned (added to its step)
        limit = model.max_position_embeddings
        self.max_request_tokens = min(limit, spec.num_blocks * self.bs) if limit else \
            spec.num_blocks * self.bs
        """Most tokens (prompt + outputs) a request may have: the model's context and the
        blocks of the pool (:meth:`add` refuses more, :meth:`_refuse` says why)."""
        self.max_prompt_tokens = (1 << 62) if spec.chunked_prefill else spec.max_num_batched_tokens
        """Longest prompt :meth:`add` takes: the token budget when prompts run whole."""

    # ----------------------------------------------------------------- queries
    @property
    def num_units(self) -> int:
        """Units of work committed (single steps or decode runs): one point of the series
        each."""
        return len(self.series) // SERIES.size

    def _series_column(self, name: str) -> np.ndarray:
        """One column of :attr:`series`, a strided view (no copy): read it once the engine
        is done — while a view is alive the buffer cannot grow, so a unit committed then
        raises ``BufferError``."""
        return np.frombuffer(self.series, dtype=SERIES_DTYPE)[name]

    @property
    def series_t(self) -> np.ndarray:
        """The clock after each unit, seconds."""
        return self._series_column("t_s")

    @property
    def series_blocks(self) -> np.ndarray:
        """KV blocks in use after each unit."""
        return self._series_column("blocks")

    @property
    def series_running(self) -> np.ndarray:
        """Requests running (admitted, not finished) after each unit."""
        return self._series_column("running")

    @property
    def series_waiting(self) -> np.ndarray:
        """Requests waiting after each unit."""
        return self._series_column("waiting")

    @property
    def outstanding(self) -> int:
        """Requests admitted or waiting, its frontend's queue included (the router's
        least-outstanding metric)."""
        return len(self.running) + len(self.waiting) + len(self.inbox) + len(self.tokenizing)

    def blocks_in_use_at(self, t: float) -> int:
        """Blocks in use after the steps completed by time ``t`` (least-KV routing)."""
        plan = self.plan
        if plan is None or not plan.decode_run or self.reserve_all:
            return self.pool.used
        started = plan.series.steps_until(t - plan.start_s, plan.steps)  # steps begun before t
        return self.pool.used + self._blocks_needed(self.steps + 1, max(started - 1, 0))

    # ---------------------------------------------------------------- requests
    def _refuse(self, req: Request) -> None:
        """The error of a request this engine cannot run (see :attr:`max_request_tokens`)."""
        spec = self.spec
        if not spec.chunked_prefill and req.prompt > spec.max_num_batched_tokens:
            raise NapkinError(
                f"request {req.rid}: a {req.prompt}-token prompt cannot run whole within "
                f"max_num_batched_tokens ({spec.max_num_batched_tokens}) with "
                "chunked_prefill off; raise the budget or turn chunking on")
        limit = self.model.max_position_embeddings
        if limit and req.prompt + req.max_out > limit:
            raise NapkinError(
                f"request {req.rid}: {req.prompt}+{req.max_out} tokens exceed {self.model.name}'s "
                f"context ({limit} tokens, max_position_embeddings); cap the lengths")
        need = -(-(req.prompt + req.max_out) // self.bs)
        raise NapkinError(
            f"request {req.rid}: {req.prompt}+{req.max_out} tokens need {need} KV blocks but "
            f"the pool has {spec.num_blocks}; raise kv_pool_gib or cap the lengths")

    def _next_look(self, begun: int, steps: int) -> int:
        """Decode steps of a run after which the scheduler next takes in requests: the first
        multiple of the recv interval (counted from its last look) at or past the ``begun``
        steps, at most the run's ``steps``."""
        interval = self.recv_interval
        look = interval - self.since_poll
        if begun > look:
            look += -(-(begun - look) // interval) * interval
        return max(1, min(steps, look))

    def _take_in(self) -> None:
        """At a step boundary: the scheduler takes in the inbox when it looks (its decode count
        since the last look reached the recv interval, or it has nothing running)."""
        interval = self.recv_interval
        look = not self.running or (self.since_poll >= interval
                                    and self.since_poll % interval == 0)
        self.since_poll = 0 if look else self.since_poll % interval
        if look and self.inbox:
            self.waiting.extend(self.inbox)
            self.inbox.clear()

    def _keys(self, req: Request, n_blocks: int) -> list:
        """Prefix-cache keys of the request's first ``n_blocks`` blocks (hashable ones only)."""
        if req.hash_key is None or not self.caching:
            return []
        kind = req.hash_key[0]
        bs = self.bs
        if kind == "src":
            ids, per = req.hash_key[1], req.hash_key[2]
            keys = []
            for b in range(n_blocks):
                j = b * bs // per
                if j >= len(ids) or (b + 1) * bs > (j + 1) * per:
                    break
                keys.append((ids[j], b))
            return keys
        if kind == "shared":
            group, tokens = req.hash_key[1], req.hash_key[2]
            return [(group, b) for b in range(min(n_blocks, tokens // bs))]
        return [(req.hash_key[1], b) for b in range(n_blocks)]  # session: whole history

    def _prefix_hits(self, req: Request) -> "PrefixHits":
        """What the prefix cache holds of ``req`` before its last token (the GPU's leading run
        of blocks, then the host tier's past it): the lookup of an admission."""
        pool, bs = self.pool, self.bs
        keys = self._keys(req, (req.prompt + req.outputs - 1) // bs)
        hit = pool.hits(keys) if keys else 0
        host = pool.host_hits(keys[hit:]) if pool.host_blocks and hit < len(keys) else 0
        if host and (hit + host) * bs <= req.transferred:
            host = 0  # its transferred KV covers them: nothing to load
        evictable = sum(1 for key in keys[:hit] if key in pool.evictable) if hit else 0
        return PrefixHits(keys, hit, host, (hit + host) * bs, evictable)

    def _take_prefix(self, req: Request, hits: "PrefixHits", blocks: int) -> None:
        """Admit ``req`` with its prefix hits: reference the GPU's cached blocks, load the host
        tier's back into fresh ones (timed with the unit), take ``blocks`` new ones; its hit
        tokens are counted when first admitted (a preempted request's re-admission finds its
        own blocks again: recompute saved, not prompt tokens served)."""
        pool, hit, host = self.pool, hits.gpu_blocks, hits.host_blocks
        if hit:
            pool.acquire(hits.keys[:hit])
            req.hashed = list(hits.keys[:hit])
        if host:  # copied back into fresh blocks, registered with the prompt's
            pool.load(hits.keys[hit:hit + host])
            self.loading_s += host * self.host_block_s
            self.host_loaded_blocks += host
        pool.allocate(blocks)
        if req.first_scheduled_s != req.first_scheduled_s:  # NaN: first admission
            req.hit_tokens = min(hits.cached_tokens, req.prompt)

    # ------------------------------------------------------------- decode set
    def _dec_remove(self, req: Request) -> None:
        done = self.steps - req.s0
        req.computed, req.outputs = req.c0 + done, req.o0 + done
        del self.decoding[req.rid]
        self.dec_base -= req.c0 - req.s0
        self.dec_left -= req.max_out - req.o0 + req.s0
        self.dec_over_clip -= req.max_out - req.o0 > self.clip
        self.residues[(req.s0 - req.c0) % self.bs] -= 1
        req.version += 1

    def _blocks_needed(self, first_step: int, k: int) -> int:
        """New blocks the decode set needs over ``k`` steps starting at step count
        ``first_step``: a sequence needs one when its context is a multiple of block_size."""
        if k <= 0:
            return 0
        bs, residues = self.bs, self.residues
        full, rest = divmod(k, bs)
        start = first_step % bs
        end = start + rest  # the residues of the last, partial cycle: start … end − 1 (mod bs)
        part = sum(residues[start:end]) if end <= bs else (
            sum(residues[start:]) + sum(residues[:end - bs]))
        return full * len(self.decoding) + part

    def _max_steps_fitting(self, first_step: int, free: int) -> int:
        """Most decode steps from step count ``first_step`` whose new blocks fit in ``free``
        (each full cycle of block_size steps needs one block per sequence)."""
        n = len(self.decoding)
        if n == 0:
            return 1 << 62
        cycles = free // n
        k = cycles * self.bs
        left = free - cycles * n
        start = first_step % self.bs
        for j in range(self.bs):
            c = self.residues[(start + j) % self.bs]
            if c > left:
                break
            left -= c
            k += 1
        return k

    # ------------------------------------------------------------- preemption
    def _release(self, req: Request) -> None:
        blocks = req.reserved if self.reserve_all else -(-req.computed // self.bs)
        self.pool.release(blocks - len(req.hashed), req.hashed)
        req.hashed = []

    def _preempt(self, victim: Request) -> None:
        del self.running[victim.rid]
        if victim.rid in self.decoding:
            self._dec_remove(victim)
        else:
            self.prefilling.pop(victim.rid, None)
        self._release(victim)
        victim.computed = 0
        victim.preemptions += 1
        self.preemptions += 1
        victim.enqueue_s = self.clock
        self.waiting.appendleft(victim)

    # --------------------------------------------------------------- planning
    def _holds_prompts(self, n_dec: int, budget: int, steps: int) -> bool:
        """Whether the next step (the engine's step ``steps + 1``) holds new prompts back
        (TensorRT-LLM): its attention-DP balancing (:meth:`_balance_hold`) or its batch waiting
        (:meth:`_batch_hold`); :attr:`hold_left` is the steps the hold lasts at most."""
        adp = self._balance_hold(n_dec, steps) if self.adp_balance else 0
        wait = self._batch_hold(n_dec, budget) if self.batch_waiting else 0
        self.batch_held = wait > 0
        self.hold_left = min(x for x in (adp, wait) if x) if adp or wait else 0
        return self.hold_left > 0

    def held(self, k: int) -> None:
        """``k`` steps ran with prompts held back: the holds' own counts advance."""
        if self.batch_held:
            self.held_steps += k
        if self.adp_batching:
            self.adp_batched += k

    def _balance_hold(self, n_dec: int, steps: int) -> int:
        """TensorRT-LLM's attention-DP balancing (``PyExecutor._balance_adp_requests``), steps
        to hold (0: none) before step ``steps + 1``. Its count of steps restarts whenever not
        every rank decodes (prompts then start at once) and whenever every rank has a prompt to
        start (then, with every rank decoding, they wait ``batching_wait_iters`` steps to
        gather more); otherwise it counts every step and lets prompts start on each
        ``timeout_iters``-th. Every rank decoding and every rank having a prompt are read as
        ``n_dec ≥ dp`` and ``dp`` prompts to start (its scheduler spreads new requests over the
        ranks by load)."""
        spec, dp, nxt = self.spec, self.dp, steps + 1
        self.adp_batching = False
        if n_dec < dp:
            self.adp_anchor, self.adp_batched = nxt, 0
            return 0
        if len(self.prefilling) + len(self.waiting) >= dp:
            self.adp_anchor = nxt
            if self.adp_batched < spec.attention_dp_batching_wait_iters:
                self.adp_batching = True
                return spec.attention_dp_batching_wait_iters - self.adp_batched
            self.adp_batched = 0
            return 0
        timeout = spec.attention_dp_timeout_iters
        phase = (nxt - self.adp_anchor) % timeout
        if phase == 0:
            self.adp_anchor = nxt
            return 0
        return timeout - phase if self.prefilling or self.waiting else 0

    def _batch_hold(self, n_dec: int, budget: int) -> int:
        """TensorRT-LLM's batch waiting (``PyExecutor._waiting_requests``), steps to hold (0:
        none): with decodes running and prompts to start, hold the prompts back this step unless
        they have been held ``batch_wait_timeout_iters`` steps already or their tokens (up to
        the step's budget) plus the decodes reach ``batch_wait_max_tokens_ratio ×
        max_num_batched_tokens``."""
        if not n_dec or not (self.prefilling or self.waiting):
            return 0
        spec = self.spec
        prompts = sum(r.num_tokens - r.computed for r in self.prefilling.values())
        for r in self.waiting:  # up to the budget: a long queue is not walked
            if prompts >= budget:
                break
            prompts += r.num_tokens
        tokens = n_dec + min(prompts, budget)
        if (self.held_steps >= spec.batch_wait_timeout_iters
                or tokens >= spec.batch_wait_max_tokens_ratio * spec.max_num_batched_tokens):
            self.held_steps = 0
            return 0
        return max(spec.batch_wait_timeout_iters - self.held_steps, 1)

    def _ratio_reserve_tokens(self) -> float:
        """SGLang's reserve for running requests: ratio × Σ min(remaining output, clip). A
        decoding request's remaining output only shrinks, so while none started above the
        clip the decoding share is the running sum ``dec_left − n·steps``."""
        ratio = self.policy.new_token_ratio(self.steps - self.ratio_reset_step)
        clip, s = self.clip, self.steps
        if self.dec_over_clip:
            left = sum(min(r.max_out - (r.o0 + s - r.s0), clip) for r in self.decoding.values())
        else:
            left = self.dec_left - len(self.decoding) * s
        left += sum(min(r.max_out - r.outputs, clip) for r in self.prefilling.values())
        return ratio * left

    def _chunk(self, req: Request, computed: int, budget: int) -> int:
        """Tokens of ``req`` this step: all that remain, capped by the long-prefill threshold
        and the budget; 0 when chunking is off and a fresh prompt does not fit whole."""
        new = req.prompt + req.outputs - computed
        spec = self.spec
        if new > budget and not spec.chunked_prefill and req.outputs == 0:
            return 0
        threshold = spec.long_prefill_token_threshold
        if 0 < threshold < new:
            new = threshold
        return new if new < budget else budget

    def _window_cut(self) -> int:
        """Steps until some decode context reaches a sliding window (costs bend there)."""
        if not self.windows:
            return 1 << 62
        s, cut = self.steps, 1 << 62
        for w in self.windows:
            for r in self.decoding.values():
                gap = w - 1 - (r.c0 + s - r.s0)
                if 0 < gap < cut:
                    cut = gap
        return cut

    def _step_parts(self, n_dec: int, chunks: list[tuple[int, int, int]],
                    offset: int) -> Parts:
        """(dense FLOPs, attention FLOPs, weight bytes, KV bytes) of a step ``offset`` steps
        after now: the decode set's contexts have grown by ``offset``. Exact mode costs the
        explicit batch through ``forward``."""
        s = self.steps + offset
        if not self.fast:
            segs = [Segment(r.c0 + s - r.s0, 1, 1) for r in self.decoding.values()] \
                if n_dec else []
            segs += [Segment(c, n, o) for c, n, o in chunks]
            return with_replicated(forward(self.model, Batch(tuple(segs)), self.precision).parts,
                                   n_dec + sum(n for _, n, _ in chunks), self.replicated)
        if not self.windows:  # (a prefill-only step: the paused decodes are not in it)
            if not chunks:
                return self.cost.decode_parts(n_dec, self.dec_base + n_dec * s)
            return self.cost.step_parts(n_dec, self.dec_base + n_dec * s if n_dec else 0, chunks)
        if not n_dec:
            return self.cost.parts(StepShape(0, 0, chunks, []))
        ctx = [r.c0 + s - r.s0 for r in self.decoding.values()]
        return self.cost.parts(StepShape(n_dec, self.dec_base + n_dec * s, chunks, ctx))

    def busiest_group(self, n_dec: int, sum_ctx: int, chunks: list[tuple[int, int, int]]
                      ) -> tuple[Parts, float]:
        """The work of the busiest data-parallel group of a step with prefill chunks (decodes
        at total context ``sum_ctx``): its even share ⌈n_dec/dp⌉ of the decodes (at their
        mean context) and the step's largest chunk whole — a chunk runs on the one group that
        holds its request, and the groups step in lock-step (:meth:`RankCost.rank_parts`).
        Its parts and new tokens."""
        cached, new, readout = max(chunks, key=lambda c: c[1])
        d = -(-n_dec // self.dp)
        ctx = sum_ctx * d // n_dec if n_dec else 0
        if self.windows:
            mean = ctx // d if d else 0
            parts = self.cost.parts(StepShape(d, ctx, [(cached, new, readout)], [mean] * d))
        else:
            parts = self.cost.step_parts(d, ctx, [(cached, new, readout)])
        return parts, d + new

    def _series(self, n_dec: int, chunks: list[tuple[int, int, int]], k: int
                ) -> tuple[StepSeries, tuple[np.ndarray, np.ndarray] | None]:
        """The unit's step times, and (recording) its first step's basis and increment."""
        if k > 1 and not chunks and not self.windows and self.fast:
            ctx = self.dec_base + n_dec * self.steps  # a decode run: contexts grow by n_dec
            parts0 = self.cost.decode_parts(n_dec, ctx)
            parts1 = self.cost.decode_parts(n_dec, ctx + n_dec)
        else:
            parts0 = self._step_parts(n_dec, chunks, 0)
            parts1 = self._step_parts(n_dec, chunks, 1) if k > 1 else None
        tokens = n_dec
        for _, n, _ in chunks:
            tokens += n
        prefill = bool(chunks)
        if self.dp > 1 and chunks:
            assert isinstance(self.timer, LayoutTimer)
            sum_ctx = self.dec_base + n_dec * self.steps if n_dec else 0
            series = self.timer.series(parts0, parts1, tokens, prefill,
                                       self.busiest_group(n_dec, sum_ctx, chunks))
        else:
            series = self.timer.series(parts0, parts1, tokens, prefill)
        if self.basis is None:
            return series, None
        effective = self.timer.effective
        b0 = np.array(effective(self.basis.terms(parts0, tokens, prefill)))
        db = np.array(effective(self.basis.terms(parts1, tokens))) - b0 if parts1 \
            else np.zeros_like(b0)
        return series, (b0, db)

    def _register_prompt(self, req: Request) -> None:
        if not self.caching or req.hash_key is None:
            return
        keys = self._keys(req, req.prompt // self.bs)
        req.hashed += self.pool.register(keys[len(req.hashed):])

    def _register_outputs(self, req: Request) -> None:
        if (not self.caching or req.hash_key is None
                or req.hash_key[0] != "session"):
            return
        keys = self._keys(req, req.computed // self.bs)
        req.hashed += self.pool.register(keys[len(req.hashed):])
