"""Multimodal and real-time workloads: vision tokens, diffusion and audio generation, playback."""
