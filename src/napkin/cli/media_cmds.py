"""``napkin media``: vision tokens and EC/KV, diffusion, speech generation, playback."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.cli.common import (
    FiniteOption,
    Format,
    FormatOpt,
    GpuOpt,
    MbuOpt,
    MfuOpt,
    PlotOption,
    WeightsOpt,
    accelerator,
    deployment,
    emit,
)
from napkin.errors import NapkinError, require
from napkin.units import MB, MS

app = typer.Typer(help="Multimodal and real time: vision tokens, EC and KV; diffusion; speech "
                       "generation; jitter buffer; interruption.", no_args_is_help=True)

PlotOpt = Annotated[Path | None, PlotOption(help="Write a figure (png/svg/pdf).")]


def _size(text: str) -> tuple[int, int]:
    h, sep, w = text.lower().partition("x")
    try:
        size = (int(h), int(w))
    except ValueError:
        size = (0, 0)
    require(bool(sep) and min(size) >= 1, f"size: {text!r} must be HEIGHTxWIDTH pixels, "
                                          "e.g. 640x640")
    return size


@app.command()
def vision(
    image: Annotated[list[str], typer.Option("--image", help="HxW of each image; "
                                                             "repeatable.")] = ["640x640"],  # noqa: B006
    model: Annotated[str, typer.Option("--model", help="VLM (catalog id or config.json with "
                                                       "vision_config).")] = "qwen3-vl-4b",
    text_tokens: Annotated[int, typer.Option("--text-tokens", help="Text tokens in the "
                                                                   "prompt.")] = 0,
    file_mb: Annotated[float | None, FiniteOption("--file-mb", help="Compressed file size "
                                                                    "of all images, MB.")] = None,
    resize: Annotated[bool, typer.Option("--resize/--no-resize", help="Resize like the "
                                                                      "preprocessor.")] = True,
    gpu: GpuOpt = None,
    mfu: MfuOpt = 1.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Visual tokens n_v = H·W/(p²r²), encoder FLOPs, EC bytes (DeepStack width) and KV."""
    from napkin.catalog import load_model, load_vision_tower
    from napkin.media.vision import image_cost, prompt_state
    from napkin.report.media_views import vision_doc
    from napkin.timing import Efficiency, call_time

    require(file_mb is None or file_mb >= 0, "file-mb: must be >= 0")
    tower, language = load_vision_tower(model), load_model(model)
    costs = [image_cost(tower, language, *_size(s), resize=resize) for s in image]
    prompt = prompt_state(costs, text_tokens, language)
    times = None
    if gpu:
        acc = accelerator(gpu, None, None, None)
        times = [call_time(c.encoder, acc, "bf16", Efficiency(mfu, 1.0)).time_s for c in costs]
    emit(vision_doc(costs, prompt, None if file_mb is None else file_mb * MB, times,
                    {"images": image, "model": model, "text_tokens": text_tokens,
                     "resize": resize, "gpu": gpu},
                    {"ec_dtype": "bf16", "kv_dtype": "bf16", "mfu": mfu}), fmt)


@app.command()
def diffusion(
    size: Annotated[str, typer.Option("--size", help="HxW of the image.")] = "1024x1024",
    model: Annotated[str, typer.Option("--model", help="DiT (catalog id or transformer "
                                                       "config.json).")] = "qwen-image-2512",
    steps: Annotated[int, typer.Option("--steps", help="Denoising steps n_s.")] = 50,
    cfg: Annotated[bool, typer.Option("--true-cfg/--no-cfg", help="Two DiT branches per step "
                                                                  "(true CFG) or one.")] = True,
    text_tokens: Annotated[int, typer.Option("--text-tokens", help="Prompt tokens in the joint "
                                                                   "attention.")] = 512,
    vae_factor: Annotated[int, typer.Option("--vae-factor", help="VAE downsampling.")] = 8,
    gpu: GpuOpt = None,
    mfu: MfuOpt = 1.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """n_s · n_b · F_step(n_v): DiT forwards and FLOPs of one generated image."""
    from napkin.catalog import load_dit
    from napkin.media.diffusion import image_generation
    from napkin.report.media_views import diffusion_doc
    from napkin.timing import Efficiency, call_time

    g = image_generation(load_dit(model), *_size(size), steps, 2 if cfg else 1, text_tokens,
                         vae_factor)
    time_s = None
    if gpu:
        step = call_time(g.step_forward, accelerator(gpu, None, None, None), "bf16",
                         Efficiency(mfu, 1.0))
        time_s = g.forwards * step.time_s
    emit(diffusion_doc(g, time_s, {"size": size, "model": model, "steps": steps,
                                   "true_cfg": cfg, "text_tokens": text_tokens, "gpu": gpu},
                       {"vae_factor": vae_factor, "mfu": mfu}), fmt)


@app.command()
def audio(
    slow: Annotated[str, typer.Option("--slow", help="Slow (per-frame) model.")] =
    "fish-s2-pro-slow",
    fast: Annotated[str, typer.Option("--fast", help="Fast (per-codebook) model.")] =
    "fish-s2-pro-fast",
    codebooks: Annotated[int, typer.Option("--codebooks", help="Fast forwards per frame.")] = 10,
    sample_rate: Annotated[float, FiniteOption("--sample-rate", help="Codec Hz.")] = 44_100,
    hop: Annotated[int, typer.Option("--hop", help="Codec samples per frame.")] = 2_048,
    context: Annotated[int, typer.Option("--context", help="Slow-path context, tokens.")] = 1_000,
    gpu: Annotated[str, typer.Option("--gpu", help="Accelerator id.")] = "h100-sxm",
    weights: WeightsOpt = "bf16",
    mfu: MfuOpt = 1.0,
    mbu: MbuOpt = 1.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Speech generation: frames/s, forwards per frame (slow + fast), FLOPs and real-time
    factor at batch 1."""
    from napkin.catalog import load_model
    from napkin.media.audio import speech_rate
    from napkin.report.media_views import audio_doc

    acc = accelerator(gpu, None, None, None)
    deps = [deployment(load_model(m), acc, weights, "bf16", False, mfu, mbu, 0.0)
            for m in (slow, fast)]
    rate = speech_rate(deps[0], deps[1], context, codebooks, sample_rate, hop)
    emit(audio_doc(rate, {"slow": slow, "fast": fast, "codebooks": codebooks,
                          "sample_rate": sample_rate, "hop": hop, "context": context,
                          "gpu": gpu},
                   {"weights": weights, "mfu": mfu, "mbu": mbu}), fmt)


def _ms_list(text: str, field: str) -> list[float]:
    try:
        values = [float(v) * MS for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(f"{field}: {text!r} must be comma-separated milliseconds") from None
    require(bool(values), f"{field}: give at least one value")
    return values


def _late(items: list[str]) -> tuple[tuple[int, float], ...]:
    out = []
    for item in items:
        block, _, ms = item.partition(":")
        try:
            out.append((int(block) - 1, float(ms) * MS))
        except ValueError:
            raise NapkinError(f"network: {item!r} must be BLOCK:MS (block from 1), "
                              "e.g. 3:50") from None
    return tuple(out)


@app.command()
def jitter(
    buffer_ms: Annotated[str, typer.Option("--buffer-ms", help="Start-up buffer(s), ms, "
                                                               "comma-separated.")] = "40,60",
    block_ms: Annotated[float, FiniteOption("--block-ms")] = 20,
    blocks: Annotated[int, typer.Option("--blocks")] = 8,
    process_ms: Annotated[float, FiniteOption("--process-ms", help="Model time per block.")] = 12,
    send_ms: Annotated[float, FiniteOption("--send-ms")] = 1,
    network_ms: Annotated[float, FiniteOption("--network-ms")] = 5,
    late: Annotated[list[str], typer.Option(
        "--network", help="BLOCK:MS network delay of one block (from 1); repeatable.")] =
    ["3:50"],  # noqa: B006
    sample_rate: Annotated[float, FiniteOption("--sample-rate")] = 24_000,
    channels: Annotated[int, typer.Option("--channels")] = 1,
    bytes_per_sample: Annotated[int, typer.Option("--bytes-per-sample")] = 2,
    clock: Annotated[float, FiniteOption("--clock-ratio", help="Device clock / nominal.")] = 1.0,
    plot: PlotOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """The jitter-buffer timeline: block bytes, arrivals, first play, gaps, total stall."""
    from napkin.media.playback import AudioFormat, PlaybackParams, playback_timeline
    from napkin.report.media_views import jitter_doc

    fmt_audio = AudioFormat(sample_rate, channels, bytes_per_sample)
    timelines = [playback_timeline(PlaybackParams(
        block_ms * MS, blocks, process_ms * MS, send_ms * MS, network_ms * MS, _late(late),
        buf, clock, fmt_audio)) for buf in _ms_list(buffer_ms, "buffer-ms")]
    if plot is not None:
        from napkin.report.media_plots import plot_playback

        require(plot.suffix in (".png", ".svg", ".pdf"), f"plot: {plot} must end in .png, "
                                                         ".svg or .pdf")
        for t in timelines:
            name = plot if len(timelines) == 1 else plot.with_stem(
                f"{plot.stem}-{t.params.buffer_s / MS:g}ms")
            plot_playback(t, name)
    emit(jitter_doc(timelines, {"buffer_ms": buffer_ms, "block_ms": block_ms, "blocks": blocks,
                                "process_ms": process_ms, "send_ms": send_ms,
                                "network_ms": network_ms, "network": late,
                                "clock_ratio": clock}), fmt)


@app.command()
def interrupt(
    command_ms: Annotated[float, FiniteOption("--command-ms")] = 123,
    control_ms: Annotated[float, FiniteOption("--control-ms", help="Control delay.")] = 5,
    poll_ms: Annotated[float, FiniteOption("--poll-ms", help="Device poll interval.")] = 10,
    phase_ms: Annotated[float, FiniteOption("--phase-ms", help="First poll time.")] = 0,
    stop_ms: Annotated[float | None, FiniteOption("--stop-compute-ms",
                                                  help="Delay until compute stops.")] = None,
    free_ms: Annotated[float | None, FiniteOption("--free-state-ms",
                                                  help="Delay until state is freed.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Interruption latency: control delay, then the device's next poll."""
    from napkin.media.playback import interruption
    from napkin.report.media_views import interrupt_doc

    i = interruption(command_ms * MS, control_ms * MS, poll_ms * MS, phase_ms * MS,
                     None if stop_ms is None else stop_ms * MS,
                     None if free_ms is None else free_ms * MS)
    emit(interrupt_doc(i, {"command_ms": command_ms, "control_ms": control_ms,
                           "poll_ms": poll_ms, "phase_ms": phase_ms}), fmt)


@app.command()
def drain(
    buffered_s: Annotated[float, FiniteOption("--buffered-s", help="Audio buffered at "
                                                                   "start, s.")] = 0.3,
    rate: Annotated[float, FiniteOption("--arrival-rate", help="Seconds of audio arriving "
                                                               "per second.")] = 0.9,
    fmt: FormatOpt = Format.table,
) -> None:
    """When a buffer empties if audio arrives slower than it plays: B / (1 − r)."""
    from napkin.media.playback import buffer_drain_s
    from napkin.report.econ_views import table_doc

    t = buffer_drain_s(buffered_s, rate)
    emit(table_doc("Buffer drain", "long run", ["", ""],
                   [["empties after", "never (arrivals keep up)" if t is None else f"{t:,.3f} s"]],
                   {"drain_s": t}, {"buffered_s": buffered_s, "arrival_rate": rate},
                   notes=["a larger start-up buffer only delays the stall when arrivals are "
                          "slower on average"]), fmt)
