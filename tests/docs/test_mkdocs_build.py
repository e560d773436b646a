"""The documentation site builds with ``mkdocs build --strict`` (as CI runs it): every page in
the nav, every link and anchor resolved, the API reference rendered from the docstrings and the
file-format page generated, and nothing fetched from the network (no web fonts)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_build_strict(tmp_path):
    """mkdocs and its plugins are in the ``test`` extras (and ``docs``), so this never skips."""
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    formats = (site / "reference" / "formats" / "index.html").read_text()
    assert "TraceArrivals" in formats and "<table>" in formats
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "napkin.api.inference" in api or "inference" in api
    assert "decode_table" in api
    for page in site.rglob("*.html"):
        assert "fonts.googleapis.com" not in page.read_text(), page


def test_api_reference_lists_every_api_module():
    import pkgutil

    import napkin.api

    page = (ROOT / "docs" / "reference" / "api.md").read_text()
    missing = [m.name for m in pkgutil.iter_modules(napkin.api.__path__)
               if f"::: napkin.api.{m.name}\n" not in page]
    assert not missing, f"add `::: napkin.api.<module>` to docs/reference/api.md: {missing}"
