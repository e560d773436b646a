"""``napkin media``: vision tokens and EC/KV, diffusion, speech generation, playback (over
:mod:`napkin.api.media`)."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import media as api
from napkin.cli.common import (
    FiniteOption,
    Format,
    FormatOpt,
    GpuOpt,
    MbuOpt,
    MfuOpt,
    PlotOption,
    WeightsOpt,
    emit,
)
from napkin.errors import NapkinError, require

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
    plot: Annotated[Path | None, PlotOption(
        help="Write the figure: tokens against image size, the first image's patch and "
             "token grid (png/svg).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Visual tokens n_v = H·W/(p²r²), encoder FLOPs, EC bytes (DeepStack width) and KV."""
    result = api.media_vision(images=[_size(s) for s in image], model=model,
                              text_tokens=text_tokens, file_mb=file_mb, resize=resize, gpu=gpu,
                              mfu=mfu)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


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
    emit(api.media_diffusion(size=_size(size), model=model, steps=steps, true_cfg=cfg,
                             text_tokens=text_tokens, vae_factor=vae_factor, gpu=gpu, mfu=mfu),
         fmt)


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
    emit(api.media_audio(slow=slow, fast=fast, codebooks=codebooks, sample_rate=sample_rate,
                         hop=hop, context=context, gpu=gpu, weights=weights, mfu=mfu, mbu=mbu),
         fmt)


def _ms_list(text: str, field: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(f"{field}: {text!r} must be comma-separated milliseconds") from None


def _late(items: list[str]) -> list[tuple[int, float]]:
    out = []
    for item in items:
        block, _, ms = item.partition(":")
        try:
            out.append((int(block), float(ms)))
        except ValueError:
            raise NapkinError(f"network: {item!r} must be BLOCK:MS (block from 1), "
                              "e.g. 3:50") from None
    return out


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
    result = api.media_jitter(buffer_ms=_ms_list(buffer_ms, "buffer-ms"), block_ms=block_ms,
                              blocks=blocks, process_ms=process_ms, send_ms=send_ms,
                              network_ms=network_ms, network=_late(late),
                              sample_rate=sample_rate, channels=channels,
                              bytes_per_sample=bytes_per_sample, clock_ratio=clock)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


@app.command()
def interrupt(
    command_ms: Annotated[float, FiniteOption(
        "--command-ms", help="When the interrupt is issued, ms since playback began.")] = 123,
    control_ms: Annotated[float, FiniteOption("--control-ms",
                                              help="Control delay to the device, ms.")] = 5,
    poll_ms: Annotated[float, FiniteOption("--poll-ms", help="Device poll interval, ms.")] = 10,
    phase_ms: Annotated[float, FiniteOption("--phase-ms", help="First poll time, ms.")] = 0,
    stop_ms: Annotated[float | None, FiniteOption(
        "--stop-compute-ms", help="Delay from the command until compute stops, ms.")] = None,
    free_ms: Annotated[float | None, FiniteOption(
        "--free-state-ms", help="Delay from the command until state is freed, ms.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Interruption latency: control delay, then the device's next poll."""
    emit(api.media_interrupt(command_ms=command_ms, control_ms=control_ms, poll_ms=poll_ms,
                             phase_ms=phase_ms, stop_compute_ms=stop_ms,
                             free_state_ms=free_ms), fmt)


@app.command()
def drain(
    buffered_s: Annotated[float, FiniteOption("--buffered-s", help="Audio buffered at "
                                                                   "start, s.")] = 0.3,
    rate: Annotated[float, FiniteOption("--arrival-rate", help="Seconds of audio arriving "
                                                               "per second.")] = 0.9,
    fmt: FormatOpt = Format.table,
) -> None:
    """When a buffer empties if audio arrives slower than it plays: B / (1 − r)."""
    emit(api.media_drain(buffered_s=buffered_s, arrival_rate=rate), fmt)
