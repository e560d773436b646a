"""YAML text through the C loader when PyYAML has it: the same data as PyYAML's pure-Python
safe loader on every shipped YAML file, and malformed text still a YAMLError."""

from importlib import resources

import pytest
import yaml

from napkin.specs.yaml_text import load_yaml


def _shipped() -> list[str]:
    root = resources.files("napkin.catalog")
    files = [p for p in root.iterdir() if p.name.endswith(".yaml")]
    for sub in ("profiles", "scenarios"):
        files += [p for p in root.joinpath(sub).iterdir() if p.name.endswith(".yaml")]
    return [p.read_text() for p in files]


def test_same_data_as_the_pure_python_safe_loader():
    texts = _shipped()
    assert len(texts) >= 6
    for text in texts:
        assert load_yaml(text) == yaml.load(text, Loader=yaml.SafeLoader)


@pytest.mark.parametrize("text", ["a: [1, 2", "a: b: c", "!!python/object:os.system x"])
def test_malformed_or_unsafe_text_is_a_yaml_error(text):
    with pytest.raises(yaml.YAMLError):
        load_yaml(text)
