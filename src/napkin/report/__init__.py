"""Rendering of results: tables (rich), markdown, JSON. The core never imports this package."""
