"""What every public API function returns: the typed value, and the document the CLI prints.

``napkin.call(...)`` and the CLI's ``napkin call`` build the same :class:`Result`; the CLI only
renders it (``--format table|md|json``) and writes its figure (``--plot``).
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from napkin.report.document import Document
from napkin.report.render import render


@dataclass(frozen=True)
class Result:
    """A computed answer.

    ``value`` is the library's typed result (a frozen dataclass, or a tuple of them);
    ``document`` is what the CLI prints: inputs and assumptions echoed, sections of formatted
    rows, and the JSON payload in base units (bytes, FLOPs, seconds, tokens; the unit in each
    key). ``data`` is that payload as a dict.
    """

    document: Document
    value: Any = None
    plotter: Callable[[Path], None] | None = field(default=None, repr=False, compare=False)

    @property
    def title(self) -> str:
        return self.document.title

    @property
    def data(self) -> dict[str, Any]:
        """The JSON payload (``--format json``) as a dict, base units."""
        return json.loads(self.to_json())

    def to_json(self, indent: int | None = 2) -> str:
        """The CLI's ``--format json`` output."""
        return json.dumps(self.document.payload(), indent=indent)

    def to_table(self) -> str:
        """The CLI's ``--format table`` output (plain text)."""
        return render(self.document, "table")

    def to_markdown(self) -> str:
        """The CLI's ``--format md`` output."""
        return render(self.document, "md")

    def to_html(self) -> str:
        """The document as an HTML fragment (title, assumptions, one table per section)."""
        return render(self.document, "html")

    def _repr_html_(self) -> str:  # Jupyter
        return self.to_html()

    def __str__(self) -> str:
        return self.to_table()

    @property
    def can_plot(self) -> bool:
        return self.plotter is not None

    def plot(self, path: str | Path) -> Path:
        """Write this result's figure (PNG, SVG or PDF by the suffix) and return its path."""
        from napkin.errors import NapkinError
        from napkin.specs.files import PLOT_SUFFIXES, check_output

        if self.plotter is None:
            raise NapkinError(f"plot: {self.title} has no figure")
        check_output(str(path), PLOT_SUFFIXES, "plot")
        try:
            self.plotter(Path(path))
        except OSError as e:  # a folder that takes no files (/proc), a full disk
            Path(path).unlink(missing_ok=True)
            raise NapkinError(f"plot: cannot write {str(path)!r} ({e.strerror})") from None
        return Path(path)
