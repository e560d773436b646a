"""How a benchmark ran its clients, when the measurement file does not say.

A closed-loop row of a silicon sample gives only the concurrency; its mean TTFT still depends
on how the harness started the clients (all at once or spread out), how many requests it sent
per client and whether it dropped a warm-up, and whether it drew lengths from a range (random
lengths keep fixed-length requests from finishing in lock-step, which otherwise makes every
client send its next prompt in the same step). A :class:`Protocol` is that assumption, written
into a profile (``harness``) so validation replays the rows the way they were fitted.

Named protocols (:data:`PROTOCOLS`):

``steady``
    clients spread over one request's life (desynchronized, as in steady state), 2 requests per
    client of warm-up dropped, 8 counted, fixed lengths (genai-perf's and aiperf's usual
    warm-up and request counts).
``inferencemax``
    InferenceMAX's client (its ``bench_serving/benchmark_serving.py``, README "Benchmark
    Client Configuration"): ``--request-rate inf --max-concurrency C --num-prompts 10·C
    --random-range-ratio 0.8``, lengths uniform in [0.8·L, L], every client at t = 0, nothing
    dropped.
``burst``
    ``vllm bench serve`` at ``--request-rate inf --max-concurrency C --num-prompts 10·C
    --random-range-ratio 0.8`` (vLLM ≥ 0.10: lengths in [0.2·L, 1.8·L]), nothing dropped.
"""

from dataclasses import asdict, dataclass, replace
from typing import Any

from napkin.calibration.measurements.records import Harness, Measurement, RangeStyle
from napkin.errors import NapkinError, require


@dataclass(frozen=True)
class Protocol:
    """A closed-loop harness: client start, counts per client and length range."""

    ramp_cycles: float = 1.0
    """Clients start spread over this many request lives (0: all at once)."""
    requests_per_client: int = 8
    """Requests counted per client."""
    warmup_per_client: int = 2
    """Requests per client sent first and dropped from the metrics."""
    range_ratio: float = 0.0
    range_style: RangeStyle = "symmetric"
    dispatch_intervals: float = 0.0
    """Mean completion intervals (one request's life / clients) the harness counts into each
    TTFT, as if a client's next request were timed from its last one's end but sent only at a
    later completion (0: timed from the send)."""
    latency_s: float = 0.0
    """Fixed time the harness counts into each TTFT on top of the engine's and the profile's
    ``request_s`` (its own client and network path), seconds."""

    def __post_init__(self) -> None:
        require(0 <= self.ramp_cycles <= 10,
                f"harness: ramp_cycles must be in [0, 10], got {self.ramp_cycles}")
        require(1 <= self.requests_per_client <= 1000,
                f"harness: requests_per_client must be in [1, 1000], got "
                f"{self.requests_per_client}")
        require(0 <= self.warmup_per_client <= 100,
                f"harness: warmup_per_client must be in [0, 100], got {self.warmup_per_client}")
        require(0 <= self.range_ratio <= 1,
                f"harness: range_ratio must be in [0, 1], got {self.range_ratio}")
        require(self.range_style in ("symmetric", "below"),
                f"harness: range_style must be symmetric or below, got {self.range_style!r}")
        require(0 <= self.dispatch_intervals <= 10,
                f"harness: dispatch_intervals must be in [0, 10], got {self.dispatch_intervals}")
        require(0 <= self.latency_s <= 60,
                f"harness: latency_s must be in [0, 60], got {self.latency_s}")

    def harness(self, h: Harness, campaign: str = "") -> Harness:
        """``h`` (a closed loop the source did not describe) run under this protocol (that of
        the campaign labelled ``campaign``, if given)."""
        c = h.concurrency or 1
        return replace(h, ramp_cycles=self.ramp_cycles, ramp_s=None,
                       num_requests=self.requests_per_client * c,
                       warmup_requests=self.warmup_per_client * c,
                       range_ratio=self.range_ratio, range_style=self.range_style,
                       dispatch_intervals=self.dispatch_intervals, latency_s=self.latency_s,
                       stated=True, campaign=campaign)

    def describe(self) -> str:
        start = ("all clients at t = 0" if self.ramp_cycles == 0 else
                 f"clients spread over {self.ramp_cycles:g} × one request's life")
        if self.range_ratio == 0 and self.range_style == "symmetric":
            lengths = "fixed lengths"
        elif self.range_style == "below":
            lengths = f"lengths uniform in [{self.range_ratio:g}·L, L]"
        else:
            lengths = (f"lengths uniform in [{1 - self.range_ratio:g}·L, "
                       f"{1 + self.range_ratio:g}·L]")
        wait = ("" if self.dispatch_intervals == 0 else
                f"; TTFT counts {self.dispatch_intervals:g} mean completion intervals before "
                "the send")
        if self.latency_s:
            wait += f"; TTFT counts {self.latency_s * 1e3:g} ms of the harness's own latency"
        return (f"{start}; {self.warmup_per_client} requests per client of warm-up dropped, "
                f"{self.requests_per_client} counted; {lengths}{wait}")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "closed_loop": self.describe()}

    @classmethod
    def of(cls, data: dict[str, Any]) -> "Protocol":
        """From a profile's ``harness`` mapping (unknown keys, such as the description, are
        ignored; missing ones take the ``steady`` values)."""
        known = {k: data[k] for k in asdict(cls()) if k in data}
        try:
            return cls(**known)
        except TypeError as e:
            raise NapkinError(f"harness: {e}") from None


PROTOCOLS: dict[str, Protocol] = {
    "steady": Protocol(),
    "inferencemax": Protocol(ramp_cycles=0.0, requests_per_client=10, warmup_per_client=0,
                             range_ratio=0.8, range_style="below"),
    "burst": Protocol(ramp_cycles=0.0, requests_per_client=10, warmup_per_client=0,
                      range_ratio=0.8, range_style="symmetric"),
}


def parse_protocol(text: str) -> Protocol:
    """A protocol by name (:data:`PROTOCOLS`) or as ``key=value,…`` over the ``steady`` values
    (keys: ramp_cycles, requests_per_client, warmup_per_client, range_ratio, range_style,
    dispatch_intervals, latency_s)."""
    text = text.strip()
    if text in PROTOCOLS:
        return PROTOCOLS[text]
    return Protocol(**_fields(text))


def _fields(text: str, field: str = "harness") -> dict[str, Any]:
    """The protocol keys of ``key=value,…`` (at least one), typed; errors name ``field``."""
    fields: dict[str, Any] = {}
    kinds = {"ramp_cycles": float, "requests_per_client": int, "warmup_per_client": int,
             "range_ratio": float, "range_style": str, "dispatch_intervals": float,
             "latency_s": float}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        require(sep == "=" and key in kinds,
                f"{field}: {part!r} is not a protocol name ({', '.join(PROTOCOLS)}) or "
                f"key=value with a key in {', '.join(kinds)}")
        try:
            fields[key] = kinds[key](value.strip())
        except ValueError:
            raise NapkinError(f"{field}: {key} must be a {kinds[key].__name__}, got "
                              f"{value.strip()!r}") from None
    require(bool(fields), f"{field}: empty; give a name ({', '.join(PROTOCOLS)}) or key=value")
    return fields


@dataclass(frozen=True)
class Campaign:
    """One benchmark campaign's rows (a model, and an engine version and a GPU unless empty)
    and the protocol they ran under."""

    model: str
    protocol: Protocol
    backend_version: str = ""
    gpu: str = ""
    fit_latency: bool = False
    """The protocol's ``latency_s`` is fitted with the profile (a non-negative time on top of
    its ``request_s`` that only this campaign's TTFTs carry) instead of given."""

    def matches(self, m: Measurement) -> bool:
        return (m.model == self.model and self.backend_version in ("", m.backend_version)
                and self.gpu in ("", m.gpu))

    @property
    def label(self) -> str:
        """The campaign's rows in words: the model, and the version and GPU when given."""
        return " ".join(v for v in (self.model, self.backend_version, self.gpu) if v)

    def describe(self) -> str:
        fitted = " (latency fitted)" if self.fit_latency else ""
        return f"{self.label}: {self.protocol.describe()}{fitted}"

    def as_dict(self) -> dict[str, Any]:
        keys = {k: v for k, v in (("backend_version", self.backend_version), ("gpu", self.gpu))
                if v}
        fitted = {"latency_fitted": True} if self.fit_latency else {}
        return {"model": self.model, **keys, **self.protocol.as_dict(), **fitted}

    @classmethod
    def of(cls, data: Any, default: Protocol) -> "Campaign":
        """From a profile's ``harness: campaigns:`` entry: ``model`` (and ``backend_version``,
        ``gpu``) plus the protocol keys that differ from ``default``; ``latency_fitted: true``
        marks a ``latency_s`` a refit fits again."""
        require(isinstance(data, dict) and isinstance(data.get("model"), str),
                "harness: each campaign needs a model (and optionally backend_version, gpu and "
                "protocol keys)")
        known = {k: data[k] for k in asdict(default) if k in data}
        fitted = data.get("latency_fitted", False)
        require(isinstance(fitted, bool),
                f"harness: campaign {data['model']}: latency_fitted must be true or false, "
                f"got {fitted!r}")
        try:
            protocol = replace(default, **known)
        except TypeError as e:
            raise NapkinError(f"harness: campaign {data['model']}: {e}") from None
        return cls(data["model"], protocol, str(data.get("backend_version") or ""),
                   str(data.get("gpu") or ""), fitted)


def parse_campaign(text: str, default: Protocol) -> Campaign:
    """``MODEL[@VERSION][/GPU]:key=value,…``: the rows of ``MODEL`` (catalog id; of engine
    ``VERSION`` and on ``GPU`` when given) ran under ``default`` with these keys changed (the
    keys of :func:`parse_protocol`), e.g. ``llama-3.1-8b@1.0.0rc3/h100-sxm:dispatch_intervals=1``;
    ``latency_s=fit`` has the fit find the campaign's harness latency
    (:attr:`Campaign.fit_latency`)."""
    who, sep, keys = text.strip().partition(":")
    who, _, gpu = who.partition("/")
    model, _, version = who.partition("@")
    require(bool(sep) and bool(model.strip()) and bool(keys.strip()),
            f"campaign: {text!r} is not MODEL[@VERSION][/GPU]:key=value,…")
    parts = [p.replace(" ", "") for p in keys.split(",")]
    fit_latency = "latency_s=fit" in parts
    keys = ",".join(p for p in parts if p and p != "latency_s=fit")
    fields = _fields(keys, "campaign") if keys else {}
    try:
        protocol = replace(default, **fields)
    except NapkinError as e:
        raise NapkinError(f"campaign: {str(e).removeprefix('harness: ')}") from None
    return Campaign(model.strip(), protocol, version.strip(), gpu.strip(), fit_latency)


def campaigns_of(harness: dict[str, Any]) -> tuple[Campaign, ...]:
    """The campaigns of a profile's ``harness`` mapping (none when it lists none)."""
    entries = harness.get("campaigns") or []
    require(isinstance(entries, list), "harness: campaigns must be a list")
    default = Protocol.of(harness)
    return tuple(Campaign.of(e, default) for e in entries)


def harness_dict(protocol: Protocol, campaigns: tuple[Campaign, ...] = ()) -> dict[str, Any]:
    """A profile's ``harness`` mapping: the default protocol, and the campaigns if any."""
    out = protocol.as_dict()
    if campaigns:
        out["campaigns"] = [c.as_dict() for c in campaigns]
    return out


def campaign_of(m: Measurement, campaigns: tuple[Campaign, ...]) -> Campaign | None:
    """The first of ``campaigns`` that ``m`` belongs to, if any."""
    return next((c for c in campaigns if c.matches(m)), None)


def assume(rows: list[Measurement] | tuple[Measurement, ...], protocol: Protocol,
           campaigns: tuple[Campaign, ...] = ()) -> list[Measurement]:
    """``rows`` with every closed loop whose source did not describe its harness run under the
    protocol of the first campaign it belongs to, else ``protocol``; rows with a stated
    harness are kept as they are."""
    def assumed(h: Harness, c: Campaign | None) -> Harness:
        return protocol.harness(h) if c is None else c.protocol.harness(h, c.label)
    return [replace(m, harness=assumed(m.harness, campaign_of(m, campaigns)))
            if not m.harness.stated and m.harness.kind == "closed_loop" else m for m in rows]


def with_latencies(rows: list[Measurement], campaigns: tuple[Campaign, ...]
                   ) -> list[Measurement]:
    """``rows`` (as :func:`assume` gave them) with the rows assumed from a fitted-latency
    campaign carrying that campaign's (new) ``latency_s``."""
    fitted = {c.label: c.protocol.latency_s for c in campaigns if c.fit_latency}
    return [replace(m, harness=replace(m.harness, latency_s=fitted[m.harness.campaign]))
            if m.harness.campaign in fitted else m for m in rows]
