"""Workload files: validation errors, arrival processes, closed loops, sessions."""

import numpy as np
import pytest

from napkin.errors import NapkinError
from napkin.serving.arrivals import ClosedLoop, OpenLoop, Sessions, generate
from napkin.serving.request import Request
from napkin.serving.workload import load_workload, parse_workload

CHAT = {"chat": {"input_tokens": 100, "output_tokens": 10}}


def test_poisson_rate_and_count():
    wl = {"seed": 3, "classes": CHAT,
          "arrivals": {"kind": "poisson", "rate_per_s": 50, "duration_s": 200}}
    reqs = generate(parse_workload(wl)).requests
    # 10,000 expected arrivals; Poisson sd = 100, so within 5 sd
    assert abs(len(reqs) - 10_000) < 500
    assert reqs.arrival_s.max() < 200
    gaps = np.diff(reqs.arrival_s)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.05)  # exponential: cv 1


def test_gamma_cv_and_num_requests():
    wl = {"seed": 1, "classes": CHAT,
          "arrivals": {"kind": "gamma", "rate_per_s": 10, "cv": 3.0, "num_requests": 20_000}}
    reqs = generate(parse_workload(wl)).requests
    gaps = np.diff(reqs.arrival_s)
    assert len(reqs) == 20_000
    assert np.mean(gaps) == pytest.approx(0.1, rel=0.1)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(3.0, rel=0.1)


def test_schedule_rates_per_segment():
    wl = {"seed": 0, "classes": CHAT, "arrivals": {"kind": "schedule", "segments": [
        {"duration_s": 100, "rate_per_s": 5}, {"duration_s": 100, "rate_per_s": 50}]}}
    t = generate(parse_workload(wl)).requests.arrival_s
    assert abs((t < 100).sum() - 500) < 5 * 23 and abs((t >= 100).sum() - 5000) < 5 * 71


def test_lengths_from_distributions_are_reproducible():
    wl = {"seed": 9, "classes": {"x": {
        "input_tokens": {"dist": "lognormal", "median": 1000, "sigma": 0.5, "max": 3000},
        "output_tokens": {"dist": "uniform", "low": 10, "high": 20}}},
        "arrivals": {"kind": "poisson", "rate_per_s": 10, "num_requests": 5000}}
    a = generate(parse_workload(wl)).requests
    b = generate(parse_workload(wl)).requests
    assert np.array_equal(a.input_tokens, b.input_tokens)
    assert np.median(a.input_tokens) == pytest.approx(1000, rel=0.05)
    assert a.input_tokens.max() <= 3000 and a.output_tokens.min() >= 10
    assert a.output_tokens.max() <= 20


def test_clients_mix_labels():
    wl = {"seed": 0, "classes": {"short": {"input_tokens": 10, "output_tokens": 5},
                                 "long": {"input_tokens": 5000, "output_tokens": 5}},
          "arrivals": {"kind": "clients", "clients": [
              {"name": "docs", "mix": {"long": 1},
               "arrivals": {"kind": "poisson", "rate_per_s": 1, "num_requests": 50}},
              {"name": "chat", "mix": {"short": 1},
               "arrivals": {"kind": "poisson", "rate_per_s": 5, "num_requests": 80}}]}}
    src = generate(parse_workload(wl))
    assert isinstance(src, OpenLoop)
    names = [src.requests.labels[i] for i in src.requests.label]
    assert names.count("docs/long") == 50 and names.count("chat/short") == 80


def test_closed_loop_keeps_n_clients_busy():
    wl = {"seed": 0, "classes": CHAT, "arrivals": {
        "kind": "closed_loop", "clients": 3, "num_requests": 7, "think_time_s": 0.5}}
    src = generate(parse_workload(wl))
    assert isinstance(src, ClosedLoop)
    first = src.start(0)
    assert [r.arrival_s for r in first] == [0, 0, 0] and [r.client for r in first] == [0, 1, 2]
    nxt = src.on_finish(first[1], 2.0, 3)
    assert (nxt.arrival_s, nxt.client, nxt.prompt) == (2.5, 1, 100)
    made = [src.on_finish(first[0], 3.0, 4 + i) for i in range(5)]
    assert sum(r is not None for r in made) == 3  # 7 in total


def test_sessions_grow_their_prompts():
    wl = {"seed": 0, "arrivals": {
        "kind": "sessions", "num_sessions": 2, "rate_per_s": 1, "spacing": "even",
        "rounds": 3, "first_input_tokens": 100, "turn_input_tokens": 20,
        "output_tokens": 30, "think_time_s": 1.0}}
    src = generate(parse_workload(wl))
    assert isinstance(src, Sessions)
    r1 = src.start(0)[0]
    assert (r1.arrival_s, r1.prompt, r1.hash_key) == (0.5, 100, ("session", 0))
    r2 = src.on_finish(r1, 4.0, 2)
    assert (r2.arrival_s, r2.prompt) == (5.0, 100 + 30 + 20)  # history + answer + new input
    r3 = src.on_finish(r2, 9.0, 3)
    assert r3.prompt == 150 + 30 + 20
    assert src.on_finish(r3, 12.0, 4) is None  # 3 rounds


@pytest.mark.parametrize("bad, field", [
    ({"classes": CHAT, "arrivals": {"kind": "poisson", "rate_per_s": -1, "duration_s": 1}},
     "arrivals.rate_per_s"),
    ({"classes": CHAT, "arrivals": {"kind": "warp"}}, "arrivals"),
    ({"classes": CHAT, "arrivals": {"kind": "poisson", "rate_per_s": 1}}, "duration_s"),
    ({"classes": CHAT, "arrivals": {"kind": "poisson", "rate_per_s": 1, "duration_s": 5,
                                    "mix": {"nope": 1}}}, "unknown classes"),
    ({"classes": {"x": {"input_tokens": 0, "output_tokens": 1}},
      "arrivals": {"kind": "poisson", "rate_per_s": 1, "duration_s": 5}}, "input_tokens"),
    ({"classes": CHAT, "arrivals": {"kind": "poisson", "rate_per_s": 1, "duration_s": 5},
      "colour": "red"}, "colour"),
])
def test_validation_errors_name_the_field(bad, field):
    with pytest.raises(NapkinError, match=field) as info:
        parse_workload(bad, "w.yaml")
    assert "\n" not in str(info.value)


def test_load_workload_errors(tmp_path):
    with pytest.raises(NapkinError, match="no such file"):
        load_workload(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("classes: [unclosed")
    with pytest.raises(NapkinError, match="not valid YAML"):
        load_workload(bad)


def test_trace_workload_relative_path(tmp_path):
    (tmp_path / "t.jsonl").write_text(
        '{"timestamp": 0, "input_length": 600, "output_length": 10, "hash_ids": [1, 2]}\n'
        '{"timestamp": 1500, "input_length": 700, "output_length": 20, "hash_ids": [1, 3]}\n')
    (tmp_path / "w.yaml").write_text(
        "arrivals: {kind: trace, format: mooncake, path: t.jsonl, time_scale: 2.0}\n")
    wl, base = load_workload(tmp_path / "w.yaml")
    reqs = generate(wl, base).requests
    assert reqs.arrival_s.tolist() == [0.0, 3.0]  # 1.5 s × 2
    assert reqs.prefix_hashes == ((1, 2), (1, 3)) and reqs.hash_block_tokens == 512


def test_request_tokens():
    r = Request(0, 0.0, 10, 5)
    r.outputs = 3
    assert r.num_tokens == 13
