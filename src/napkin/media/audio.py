"""Speech generation with a slow and a fast path (chapter 3.3.2: Fish Audio S2 Pro).

The slow transformer advances one acoustic frame per step; inside the frame the fast
transformer fills the frame's codebook indices: one forward forms its state from the slow
hidden state, then ``codebooks − 1`` more predict the remaining indices — ``codebooks`` fast
forwards per frame (10 for S2 Pro). The codec turns frames back into a waveform at
``sample_rate / hop`` frames per second (44,100 / 2,048 ≈ 21.53 for S2 Pro), so language tokens
per second, frames per second and seconds of audio per second are three different rates.

Per-frame cost: one slow decode step at its context plus ``codebooks`` fast decode steps at
contexts 0 … codebooks − 1, each through :func:`napkin.accounting.forward` (each reads out:
the fast state-forward's logits are computed even though they are discarded).
"""

from dataclasses import dataclass

from napkin.accounting import Batch
from napkin.errors import require
from napkin.timing.roofline import Deployment

S2_PRO_SAMPLE_RATE_HZ = 44_100
S2_PRO_HOP_SAMPLES = 2_048
"""Codec samples per frame (``encoder_rates`` 2·4·8·8 × quantizer downsample 2·2)."""
S2_PRO_CODEBOOKS = 10
"""1 semantic + 9 residual codebooks."""


@dataclass(frozen=True)
class FrameCost:
    """One acoustic frame on the slow and fast paths."""

    slow_forwards: int
    fast_forwards: int
    flops: float
    bytes: float
    time_s: float
    """Sequential time at batch 1 (each forward waits for the one before)."""


@dataclass(frozen=True)
class SpeechRate:
    frames_per_s: float
    """Frames per second of audio."""
    frame: FrameCost

    @property
    def forwards_per_audio_s(self) -> float:
        return self.frames_per_s * (self.frame.slow_forwards + self.frame.fast_forwards)

    @property
    def flops_per_audio_s(self) -> float:
        return self.frames_per_s * self.frame.flops

    @property
    def real_time_factor(self) -> float:
        """Seconds of compute per second of audio (< 1: faster than playback)."""
        return self.frames_per_s * self.frame.time_s


MAX_CODEBOOKS = 1024
"""Most codebooks per frame costed (one fast step each; published codecs use 8 to 32)."""


def frames_per_s(sample_rate_hz: float = S2_PRO_SAMPLE_RATE_HZ,
                 hop_samples: int = S2_PRO_HOP_SAMPLES) -> float:
    """Codec frames per second of audio: ``sample_rate / hop``."""
    require(sample_rate_hz > 0, f"sample-rate: must be > 0 Hz, got {sample_rate_hz}")
    require(hop_samples >= 1, f"hop: must be >= 1 sample, got {hop_samples}")
    return sample_rate_hz / hop_samples


def frame_cost(slow: Deployment, fast: Deployment, context_tokens: int,
               codebooks: int = S2_PRO_CODEBOOKS) -> FrameCost:
    """One frame: a slow step at ``context_tokens`` of context, then ``codebooks`` fast steps."""
    require(1 <= codebooks <= MAX_CODEBOOKS,
            f"codebooks: must be in [1, {MAX_CODEBOOKS}], got {codebooks}")
    require(context_tokens >= 0, f"context: must be >= 0 tokens, got {context_tokens}")
    slow.model.check_context(context_tokens + 1)
    calls = [(slow, slow.cost(Batch.decode(context_tokens)))]
    calls += [(fast, fast.cost(Batch.decode(j))) for j in range(codebooks)]
    return FrameCost(1, codebooks, sum(c.flops for _, c in calls), sum(c.bytes for _, c in calls),
                     sum(dep.time(c).time_s for dep, c in calls))


def speech_rate(slow: Deployment, fast: Deployment, context_tokens: int,
                codebooks: int = S2_PRO_CODEBOOKS, sample_rate_hz: float = S2_PRO_SAMPLE_RATE_HZ,
                hop_samples: int = S2_PRO_HOP_SAMPLES) -> SpeechRate:
    """Forwards, FLOPs and compute time per second of generated audio at batch 1."""
    return SpeechRate(frames_per_s(sample_rate_hz, hop_samples),
                      frame_cost(slow, fast, context_tokens, codebooks))
