"""Form fields (a query string or a JSON body) as the API's keyword arguments, and the YAML
text boxes as mappings; what does not parse reads as the CLI's line for that option."""

import math
from collections.abc import Mapping
from typing import Any

import yaml

from napkin.api.text import parse_ints
from napkin.errors import NapkinError
from napkin.specs.yaml_text import load_yaml
from napkin.web.paths import PathGuard


class Form:
    """Form fields (a query string or a JSON body) as API arguments; a value that does not parse
    is the CLI's line for that option (``Invalid value for '--context': …``)."""

    def __init__(self, values: Mapping[str, Any], guard: PathGuard | None = None) -> None:
        self.values = values
        self.guard = guard

    def raw(self, key: str) -> Any:
        value = self.values.get(key)
        return None if value is None or (isinstance(value, str) and not value.strip()) else value

    def text(self, key: str, default: str | None = None) -> str | None:
        """The field's text; a file it names resolved by the server's :class:`PathGuard`."""
        value = self.raw(key)
        if value is None:
            return default
        text = str(value).strip()
        return self.guard.value(key, text) if self.guard is not None else text

    def required(self, key: str, metavar: str) -> str:
        value = self.text(key)
        if value is None:
            raise NapkinError(f"Missing argument '{metavar}'.")
        return value

    @staticmethod
    def _flag(key: str) -> str:
        return "--" + key.replace("_", "-")

    def int(self, key: str, default: int | None = None) -> int | None:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        try:
            return int(str(value).strip())
        except ValueError:
            raise NapkinError(f"Invalid value for '{self._flag(key)}': Input should be a valid "
                              "integer, unable to parse string as an integer") from None

    def float(self, key: str, default: float | None = None) -> float | None:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            value = str(value)
        try:
            number = float(value if isinstance(value, int | float) else str(value).strip())
        except ValueError as e:
            raise NapkinError(f"Invalid value for '{self._flag(key)}': {e}") from None
        if not math.isfinite(number):
            raise NapkinError(f"Invalid value for '{self._flag(key)}': must be a finite number, "
                              f"got {str(value).strip()!r}")
        return number

    def bool(self, key: str) -> bool:
        value = self.raw(key)
        if isinstance(value, bool):
            return value
        return value is not None and str(value).strip().lower() in ("1", "true", "yes", "on")

    def ints(self, key: str, default: str) -> list[int]:
        """``"1,8,16"`` → ``[1, 8, 16]`` (the CLI's comma-separated integers)."""
        value = self.raw(key)
        text = default if value is None else (
            ",".join(map(str, value)) if isinstance(value, list) else str(value))
        return parse_ints(text, key)

    def lines(self, key: str) -> list[str]:
        """A list, or text with one item per line (blank lines and ``#`` comments skipped)."""
        value = self.values.get(key)
        if value is None:
            return []
        items = value if isinstance(value, list) else str(value).splitlines()
        out = [s for s in (str(i).strip() for i in items) if s and not s.startswith("#")]
        return self.guard.overrides(out) if self.guard is not None and key == "overrides" \
            else out


def parse_yaml(text: Any, what: str, required: bool = True) -> dict[str, Any] | None:
    """A YAML (or JSON) mapping from a text box or an uploaded file's text; the errors read as
    the CLI's for a file (``scenario: not valid YAML (…)``)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        if required:
            raise NapkinError(f"{what}: give the {what} (YAML)")
        return None
    if isinstance(text, dict):
        return text
    try:
        data = load_yaml(str(text), what)
    except yaml.YAMLError as e:
        raise NapkinError(f"{what}: not valid YAML ({str(e).splitlines()[0]})") from None
    except RecursionError:
        raise NapkinError(f"{what}: nested too deeply to read") from None
    if not isinstance(data, dict):
        raise NapkinError(f"{what}: a {what} must be a YAML mapping")
    return data
