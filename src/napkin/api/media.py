"""Multimodal and real time: ``napkin media vision | diffusion | audio | jitter | interrupt |
drain``."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, ModelRef, as_field, deployment, load_gpu, load_model
from napkin.errors import require
from napkin.specs.hardware import Accelerator
from napkin.timing.efficiency import Efficiency
from napkin.timing.roofline import call_time
from napkin.units import MB, MS

Size = tuple[int, int]
"""``(height, width)`` in pixels."""


def _size(size: Size, field: str) -> Size:
    ok = (isinstance(size, tuple | list) and len(size) == 2
          and all(isinstance(v, int) and v >= 1 for v in size))
    require(ok, f"{field}: {size!r} must be (HEIGHT, WIDTH) pixels, integers >= 1")
    return size[0], size[1]


def _gpu_name(gpu: GpuRef | None) -> str | None:
    return gpu if gpu is None or isinstance(gpu, str) else gpu.id


def _model_name(model: ModelRef) -> str:
    return model if isinstance(model, str) else model.name


def _accelerator(gpu: GpuRef | None) -> Accelerator | None:
    return None if gpu is None else load_gpu(gpu)


@checked
def media_vision(*, images: Sequence[Size] = ((640, 640),), model: str = "qwen3-vl-4b",
                 text_tokens: int = 0, file_mb: float | None = None, resize: bool = True,
                 gpu: GpuRef | None = None, mfu: float = 1.0) -> Result:
    """What images cost a vision-language model: visual tokens, encoder FLOPs, the encoder
    cache (EC) and the KV they occupy.

    Each image (``images``: (height, width) pixels, resized like the preprocessor unless
    ``resize`` is False) gives ``n_v = H·W/(p²·r²)`` visual tokens (patch p, merge r); EC =
    ``n_v × out_hidden_size × mergers (final + DeepStack) × 2 B`` (bf16); KV of the visual and
    ``text_tokens`` text tokens at the language model's bytes per token (bf16). ``model``: a
    catalog VLM or a config.json with ``vision_config``. ``file_mb``: the compressed files'
    size (MB = 1e6 B), shown beside EC and KV. With ``gpu``, the encoder time at the roofline
    with ``mfu`` (s). ``value``: ``{"images": list[ImageCost], "prompt": PromptState,
    "encoder_time_s": list[float] | None}``. The result has a figure: visual tokens against
    image size (square images through the preprocessor, the given images marked) and the
    first image's patch and token grid (Figure 3-16).
    """
    from napkin.catalog import load_vision_tower
    from napkin.media.vision import image_cost, image_tokens, prompt_state
    from napkin.report.media_views import vision_doc

    require(file_mb is None or file_mb >= 0, "file-mb: must be >= 0")
    sizes = [_size(s, "image") for s in images]
    require(bool(sizes), "image: give at least one image")
    tower, language = load_vision_tower(model), load_model(model)
    costs = [image_cost(tower, language, h, w, resize=resize) for h, w in sizes]
    prompt = prompt_state(costs, text_tokens, language)
    acc = _accelerator(gpu)
    times = None if acc is None else [
        call_time(c.encoder, acc, "bf16", Efficiency(mfu, 1.0)).time_s for c in costs]
    doc = vision_doc(costs, prompt, None if file_mb is None else file_mb * MB, times,
                     {"images": [f"{h}x{w}" for h, w in sizes], "model": model,
                      "text_tokens": text_tokens, "resize": resize, "gpu": _gpu_name(gpu)},
                     {"ec_dtype": "bf16", "kv_dtype": "bf16", "mfu": mfu})
    # square images from 64 px to past the largest given side, through the preprocessor
    top = max(2048, 2 * max(max(s) for s in sizes))
    sides = sorted({round(64 * (top / 64) ** (k / 47)) for k in range(48)})
    curve = [(side, image_tokens(tower, side, side)[2]) for side in sides]

    def plotter(path: Path) -> None:
        from napkin.report.media_plots import plot_vision_tokens

        plot_vision_tokens(sizes, costs, curve, tower.patch_size, tower.spatial_merge_size,
                           _model_name(model), path)

    return Result(doc, {"images": costs, "prompt": prompt, "encoder_time_s": times}, plotter)


@checked
def media_diffusion(*, size: Size = (1024, 1024), model: str = "qwen-image-2512",
                    steps: int = 50, true_cfg: bool = True, text_tokens: int = 512,
                    vae_factor: int = 8, gpu: GpuRef | None = None,
                    mfu: float = 1.0) -> Result:
    """What one generated image costs a diffusion transformer: ``n_s · n_b · F_step(n_v)``.

    The latent has ``n_v = (H/f/p)·(W/f/p)`` positions (``size`` = (H, W) pixels, VAE factor
    f = ``vae_factor``, DiT patch p); each of ``steps`` (n_s) denoising steps runs n_b = 2 DiT
    forwards with ``true_cfg`` (1 without) over the latent and ``text_tokens`` prompt tokens
    in joint attention; FLOPs = forwards × F_step. ``model``: a catalog DiT or a transformer
    config.json. With ``gpu``, the denoising time at the roofline with ``mfu`` (s).
    ``value``: the :class:`~napkin.media.diffusion.Generation`.
    """
    from napkin.catalog import load_dit
    from napkin.media.diffusion import image_generation
    from napkin.report.media_views import diffusion_doc

    height, width = _size(size, "size")
    g = image_generation(load_dit(model), height, width, steps, 2 if true_cfg else 1,
                         text_tokens, vae_factor)
    acc = _accelerator(gpu)
    time_s = None if acc is None else (
        g.forwards * call_time(g.step_forward, acc, "bf16", Efficiency(mfu, 1.0)).time_s)
    doc = diffusion_doc(g, time_s, {"size": f"{height}x{width}", "model": model,
                                    "steps": steps, "true_cfg": true_cfg,
                                    "text_tokens": text_tokens, "gpu": _gpu_name(gpu)},
                        {"vae_factor": vae_factor, "mfu": mfu})
    return Result(doc, g)


@checked
def media_audio(*, slow: ModelRef = "fish-s2-pro-slow", fast: ModelRef = "fish-s2-pro-fast",
                codebooks: int = 10, sample_rate: float = 44_100, hop: int = 2_048,
                context: int = 1_000, gpu: GpuRef = "h100-sxm", weights: str = "bf16",
                mfu: float = 1.0, mbu: float = 1.0) -> Result:
    """How fast a slow/fast speech model generates audio at batch 1.

    The codec makes ``sample_rate / hop`` frames per second of audio (Hz / samples); each frame
    is one ``slow`` step at ``context`` tokens of context and ``codebooks`` ``fast`` steps.
    Forwards, FLOPs and bytes per frame and per second of audio; time per frame at the
    roofline ``max(FLOPs/(peak·mfu), bytes/(BW·mbu))`` on ``gpu`` with ``weights``; real-time
    factor = compute seconds per second of audio. ``value``: the
    :class:`~napkin.media.audio.SpeechRate`.
    """
    from napkin.media.audio import speech_rate
    from napkin.report.media_views import audio_doc

    acc = load_gpu(gpu)
    slow_dep, fast_dep = (
        as_field(name, lambda m=m: deployment(m, acc, weights=weights, mfu=mfu, mbu=mbu))
        for name, m in (("slow", slow), ("fast", fast)))
    rate = speech_rate(slow_dep, fast_dep, context, codebooks, sample_rate, hop)
    doc = audio_doc(rate, {"slow": _model_name(slow), "fast": _model_name(fast),
                           "codebooks": codebooks, "sample_rate": sample_rate, "hop": hop,
                           "context": context, "gpu": _gpu_name(gpu)},
                    {"weights": weights, "mfu": mfu, "mbu": mbu})
    return Result(doc, rate)


def _network(network: Mapping[int, float] | Sequence[tuple[int, float]]
             ) -> list[tuple[int, float]]:
    pairs = list(network.items()) if isinstance(network, Mapping) else list(network)
    for pair in pairs:
        require(len(pair) == 2 and isinstance(pair[0], int)
                and isinstance(pair[1], int | float),
                f"network: {pair!r} must be (BLOCK, MS) with BLOCK an integer from 1")
    return [(block, ms) for block, ms in pairs]


@checked
def media_jitter(*, buffer_ms: float | Sequence[float] = (40, 60), block_ms: float = 20,
                 blocks: int = 8, process_ms: float = 12, send_ms: float = 1,
                 network_ms: float = 5,
                 network: Mapping[int, float] | Sequence[tuple[int, float]] = ((3, 50),),
                 sample_rate: float = 24_000, channels: int = 1, bytes_per_sample: int = 2,
                 clock_ratio: float = 1.0) -> Result:
    """When audio blocks streamed through a jitter buffer play, and where playback stalls.

    Block i (from 0) is captured by ``(i + 1)·block_ms`` and arrives ``process_ms + send_ms +
    network delay`` later (``network_ms``, or its entry in ``network``: block from 1 → delay
    ms); playback starts at the first arrival + ``buffer_ms`` and block i plays at
    ``max(arrival_i, end of block i − 1)``, each lasting ``block_ms / clock_ratio``. A block
    is ``round(sample_rate · block) · channels · bytes_per_sample`` bytes. One timeline per
    buffer in ``buffer_ms`` (all times ms in, seconds in the payload). ``value``:
    ``list[Timeline]``, one per buffer. The figure is one file per buffer, named
    ``STEM-<buffer>ms.SUFFIX`` when there are several.
    """
    from napkin.media.playback import AudioFormat, PlaybackParams, playback_timeline
    from napkin.report.media_views import jitter_doc

    buffers = [buffer_ms] if isinstance(buffer_ms, int | float) else list(buffer_ms)
    require(bool(buffers), "buffer-ms: give at least one value")
    pairs = _network(network)
    audio = AudioFormat(sample_rate, channels, bytes_per_sample)
    overrides = tuple((block - 1, ms * MS) for block, ms in pairs)
    timelines = [playback_timeline(PlaybackParams(
        block_ms * MS, blocks, process_ms * MS, send_ms * MS, network_ms * MS, overrides,
        buf * MS, clock_ratio, audio)) for buf in buffers]

    def plotter(path: Path) -> None:
        from napkin.report.media_plots import plot_playback

        for t in timelines:
            plot_playback(t, path if len(timelines) == 1 else path.with_stem(
                f"{path.stem}-{t.params.buffer_s / MS:g}ms"))

    doc = jitter_doc(timelines, {"buffer_ms": buffers, "block_ms": block_ms, "blocks": blocks,
                                 "process_ms": process_ms, "send_ms": send_ms,
                                 "network_ms": network_ms,
                                 "network": [list(p) for p in pairs],
                                 "clock_ratio": clock_ratio})
    return Result(doc, timelines, plotter)


@checked
def media_interrupt(*, command_ms: float = 123, control_ms: float = 5, poll_ms: float = 10,
                    phase_ms: float = 0, stop_compute_ms: float | None = None,
                    free_state_ms: float | None = None) -> Result:
    """How long an interrupt takes to silence playback.

    The command issued at ``command_ms`` reaches the device ``control_ms`` later, at ``c``;
    the device polls at ``phase_ms + k·poll_ms`` and mutes at the first poll at or after
    ``c``: perceived latency = muted − command (ms in, seconds in the payload). Compute
    stops ``stop_compute_ms`` and state is freed ``free_state_ms`` after the command, when
    given. ``value``: the :class:`~napkin.media.playback.Interruption`.
    """
    from napkin.media.playback import interruption
    from napkin.report.media_views import interrupt_doc

    i = interruption(command_ms * MS, control_ms * MS, poll_ms * MS, phase_ms * MS,
                     None if stop_compute_ms is None else stop_compute_ms * MS,
                     None if free_state_ms is None else free_state_ms * MS)
    return Result(interrupt_doc(i, {"command_ms": command_ms, "control_ms": control_ms,
                                    "poll_ms": poll_ms, "phase_ms": phase_ms,
                                    "stop_compute_ms": stop_compute_ms,
                                    "free_state_ms": free_state_ms}), i)


@checked
def media_drain(*, buffered_s: float = 0.3, arrival_rate: float = 0.9) -> Result:
    """When a playback buffer empties if audio arrives slower than it plays.

    Holding ``buffered_s`` seconds of audio, playing 1 s per second and receiving
    ``arrival_rate`` seconds of audio per second, it empties after ``B / (1 − r)`` seconds;
    never when ``r >= 1``. ``value``: those seconds, or None (never).
    """
    from napkin.media.playback import buffer_drain_s
    from napkin.report.econ_views import table_doc

    t = buffer_drain_s(buffered_s, arrival_rate)
    doc = table_doc("Buffer drain", "long run", ["", ""],
                    [["empties after",
                      "never (arrivals keep up)" if t is None else f"{t:,.3f} s"]],
                    {"drain_s": t}, {"buffered_s": buffered_s, "arrival_rate": arrival_rate},
                    notes=["a larger start-up buffer only delays the stall when arrivals are "
                           "slower on average"])
    return Result(doc, t)
