"""Rendering of results: boxed text tables (drawn as rich draws them), markdown, JSON. The core
never imports this package."""
