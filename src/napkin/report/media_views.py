"""Documents for ``napkin media``."""

from typing import Any

from napkin.media.audio import SpeechRate
from napkin.media.diffusion import Generation
from napkin.media.playback import Interruption, Timeline
from napkin.media.vision import REUSE_CONDITIONS, ImageCost, PromptState
from napkin.report.document import Document, Section
from napkin.units import MB, TFLOP, MiB


def _ms(s: float) -> str:
    return f"{s * 1e3:,.1f}"


def vision_doc(images: list[ImageCost], prompt: PromptState, file_bytes: float | None,
               times_s: list[float] | None, inputs: dict[str, Any],
               assumptions: dict[str, Any]) -> Document:
    rows = []
    for i, c in enumerate(images):
        row = [str(i + 1), f"{c.height}×{c.width}", f"{c.patches:,}", f"{c.tokens:,}",
               f"{c.features_bytes:,.0f}", f"{c.ec_bytes / MiB:,.4f}", f"{c.kv_bytes / MiB:,.4f}",
               f"{c.encoder.flops / TFLOP:,.3f}"]
        if times_s is not None:
            row.append(_ms(times_s[i]))
        rows.append(row)
    cols = ["image", "resized H×W", "patches", "tokens n_v", "last-layer bytes", "EC MiB",
            "KV MiB", "encoder TFLOPs"] + (["encoder ms"] if times_s is not None else [])
    repr_rows = []
    if file_bytes is not None:
        repr_rows.append(["file (all images)", f"{file_bytes / MB:,.3f} MB",
                          "the receiver still runs E → P → D", REUSE_CONDITIONS["file"]])
    repr_rows += [
        ["EC (all images)", f"{prompt.ec_bytes / MiB:,.4f} MiB",
         "the receiver starts at language prefill", REUSE_CONDITIONS["ec"]],
        ["KV of visual tokens", f"{prompt.visual_kv_bytes / MiB:,.4f} MiB",
         "the language context is already built", REUSE_CONDITIONS["kv"]],
        [f"KV of {prompt.text_tokens:,} text tokens", f"{prompt.text_kv_bytes / MiB:,.4f} MiB",
         "", ""],
        ["KV of the whole input", f"{prompt.kv_bytes / MiB:,.4f} MiB", "", ""],
    ]
    return Document("Vision input: tokens, encoder cache, KV", inputs, assumptions, [
        Section("Images", cols, rows,
                ["n_v = H·W/(p²·r²) after resizing to multiples of p·r",
                 "EC = n_v × out_hidden_size × mergers (final + DeepStack) × bytes"]),
        Section("Three representations", ["what is sent", "size", "then", "reusable when"],
                repr_rows),
    ], {"images": images, "prompt": prompt, "file_bytes": file_bytes,
        "encoder_time_s": times_s})


def diffusion_doc(g: Generation, time_s: float | None, inputs: dict[str, Any],
                  assumptions: dict[str, Any]) -> Document:
    rows = [["latent positions n_v", f"{g.positions:,}"],
            ["denoising steps n_s × branches n_b", f"{g.steps} × {g.branches}"],
            ["DiT forwards", f"{g.forwards:,}"],
            ["F_step: one forward", f"{g.step_forward.flops / TFLOP:,.3f} TFLOPs"],
            ["n_s·n_b·F_step", f"{g.flops:.4e} FLOPs"]]
    if time_s is not None:
        rows.append(["denoising time", f"{time_s:,.3f} s"])
    return Document("Diffusion image generation", inputs, assumptions, [Section(
        "Denoising", ["", ""], rows,
        ["the latent set is fixed: FLOPs grow linearly with steps; text encoder and VAE are "
         "separate work"])],
        {"generation": g, "flops": g.flops, "forwards": g.forwards, "time_s": time_s})


def audio_doc(r: SpeechRate, inputs: dict[str, Any], assumptions: dict[str, Any]) -> Document:
    f = r.frame
    rows = [["frames per second of audio", f"{r.frames_per_s:,.3f}"],
            ["forwards per frame: slow + fast", f"{f.slow_forwards} + {f.fast_forwards}"],
            ["forwards per second of audio", f"{r.forwards_per_audio_s:,.1f}"],
            ["GFLOPs per frame", f"{f.flops / 1e9:,.3f}"],
            ["GFLOPs per second of audio", f"{r.flops_per_audio_s / 1e9:,.1f}"],
            ["GB moved per frame", f"{f.bytes / 1e9:,.3f}"],
            ["time per frame (batch 1)", f"{_ms(f.time_s)} ms"],
            ["real-time factor (compute s per audio s)", f"{r.real_time_factor:,.3f}"]]
    return Document("Speech generation: slow and fast paths", inputs, assumptions, [Section(
        "Per frame and per second of audio", ["", ""], rows,
        ["tokens/s, frames/s and audio seconds/s are different rates"])],
        {"rate": r, "frames_per_s": r.frames_per_s,
         "forwards_per_audio_s": r.forwards_per_audio_s,
         "flops_per_audio_s": r.flops_per_audio_s, "real_time_factor": r.real_time_factor})


def jitter_doc(timelines: list[Timeline], inputs: dict[str, Any]) -> Document:
    sections = []
    for t in timelines:
        rows = [[str(b.index + 1), _ms(b.capture_end_s), _ms(b.arrival_s), _ms(b.scheduled_s),
                 _ms(b.play_start_s), _ms(b.play_end_s), _ms(b.late_s) if b.late_s else ""]
                for b in t.blocks]
        p = t.params
        sections.append(Section(
            f"Buffer {p.buffer_s * 1e3:g} ms: first play {_ms(t.first_play_s)} ms, "
            f"{t.gaps} gap(s), stall {_ms(t.total_stall_s)} ms",
            ["block", "captured ms", "arrives ms", "scheduled ms", "plays ms", "ends ms",
             "gap ms"], rows,
            [f"block = {p.block_bytes:,} B ({p.audio.sample_rate_hz:g} Hz × {p.block_s * 1e3:g} ms "
             f"× {p.audio.channels} ch × {p.audio.bytes_per_sample} B); first arrival "
             f"{_ms(t.first_arrival_s)} ms; ends {_ms(t.end_s)} ms"]))
    return Document("Audio playback through a jitter buffer", inputs, {}, sections,
                    {"timelines": [{"buffer_s": t.params.buffer_s, "block_bytes":
                                    t.params.block_bytes, "first_arrival_s": t.first_arrival_s,
                                    "first_play_s": t.first_play_s, "gaps": t.gaps,
                                    "late_blocks": t.late_blocks,
                                    "total_stall_s": t.total_stall_s, "end_s": t.end_s,
                                    "blocks": list(t.blocks)} for t in timelines]})


def interrupt_doc(i: Interruption, inputs: dict[str, Any]) -> Document:
    rows = [["command issued", "instant", f"{_ms(i.command_s)} ms"],
            ["reaches the device (+ control delay)", "instant",
             f"{_ms(i.reaches_device_s)} ms"],
            ["device mutes (its next poll)", "instant", f"{_ms(i.muted_s)} ms"],
            ["waited for that poll", "duration", f"{_ms(i.poll_wait_s)} ms"],
            ["perceived latency: mutes − issued", "duration", f"{_ms(i.latency_s)} ms"]]
    if i.stop_compute_s is not None:
        rows.append(["backend stops computing", "instant", f"{_ms(i.stop_compute_s)} ms"])
    if i.free_state_s is not None:
        rows.append(["buffer and state freed", "instant", f"{_ms(i.free_state_s)} ms"])
    return Document("Interruption", inputs, {}, [Section(
        "Timeline", ["event", "kind", "time"], rows,
        ["instants are times since the start of playback; muting, stopping compute and "
         "freeing state are three separate moments"])],
        {"interruption": i})
