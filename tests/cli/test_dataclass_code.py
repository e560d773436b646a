"""The console script compiles each dataclass method text once per install: a class defined
through :class:`~napkin.cli.dataclass_code.Methods` gets the very code the standard library
compiles (equal code objects, the same behaviour), a later process loads it instead of
compiling, and a damaged, foreign or unwritable cache costs a compile, never a wrong class."""

import builtins
import dataclasses
import marshal
import subprocess
import sys
import textwrap
from dataclasses import InitVar, dataclass, field
from pathlib import Path

import pytest

from napkin import code_cache
from napkin.cli import dataclass_code
from napkin.cli.dataclass_code import Methods


def _classes() -> list[type]:
    """Dataclasses of every kind of generated method: frozen (``__setattr__``,
    ``__delattr__``, ``__hash__``), ordered, defaults and factories, ``InitVar`` and
    ``__post_init__``, keyword-only, slots, inheritance."""

    @dataclass(frozen=True)
    class Point:
        x_m: float
        y_m: float = 0.0

    @dataclass(order=True)
    class Item:
        rank: int
        tags: list[str] = field(default_factory=list)
        scale: InitVar[float] = 1.0
        size: float = field(init=False, default=0.0)

        def __post_init__(self, scale: float) -> None:
            self.size = self.rank * scale

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Options:
        name: str
        count: int = 3

    @dataclass(frozen=True)
    class Point3(Point):
        z_m: float = 0.0

    return [Point, Item, Options, Point3]


def _methods(cls: type) -> dict[str, object]:
    return {name: getattr(cls, name).__code__ for name in
            ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__", "__hash__", "__lt__")
            if hasattr(getattr(cls, name, None), "__code__")}


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The cache folder in ``tmp_path``; the standard library's ``exec`` back afterwards."""
    monkeypatch.setattr(code_cache, "FOLDER", tmp_path)
    monkeypatch.setattr(dataclasses, "exec", builtins.exec, raising=False)
    return tmp_path


def test_the_same_code_as_the_standard_library(folder):
    reference = [_methods(c) for c in _classes()]
    methods = dataclass_code.install("serve")
    assert dataclasses.exec is methods
    ours = _classes()
    assert [_methods(c) for c in ours] == reference  # code objects compare by their contents
    assert sum(len(m) for m in reference) == 22  # 6 + 4 (not frozen: no __setattr__ …) + 6 + 6
    assert methods.compiled == len(methods.code) >= 18  # equal texts share one entry
    point, item, options, point3 = ours
    assert point(1.0) == point(1.0, 0.0) and hash(point(1.0)) == hash(point(1.0, 0.0))
    assert repr(point3(1.0, z_m=2.0)).endswith(".Point3(x_m=1.0, y_m=0.0, z_m=2.0)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        point(1.0).x_m = 2.0  # type: ignore[misc]
    assert item(2, scale=1.5).size == 3.0 and item(1) < item(2)
    assert item(1).tags is not item(1).tags  # a fresh list each
    with pytest.raises(TypeError):
        options("a")  # type: ignore[misc]  # keyword-only
    assert options(name="a").count == 3


def test_a_later_process_loads_instead_of_compiling(folder):
    first = dataclass_code.install("serve")
    reference = [_methods(c) for c in _classes()]
    first.save()
    (saved,) = folder.glob("dataclass-methods.serve.*.marshal")
    assert saved.stat().st_mode & 0o777 == 0o644
    stamp = saved.stat().st_mtime_ns
    later = dataclass_code.install("serve")
    assert later.code.keys() == first.code.keys()
    assert [_methods(c) for c in _classes()] == reference
    assert later.compiled == 0  # nothing new: every text was on disk
    later.save()
    assert saved.stat().st_mtime_ns == stamp  # nothing compiled, nothing written
    other = dataclass_code.install("call")  # another command keeps its own table
    assert other.code == {}


@pytest.mark.parametrize("content", [b"", b"\x00garbage", marshal.dumps({"text": 1}),
                                     marshal.dumps([1, 2])])
def test_a_damaged_or_foreign_file_is_compiled_afresh_and_replaced(folder, content):
    path = folder / "table.marshal"
    path.write_bytes(content)
    methods = Methods(path)
    assert methods.code == {}
    reference = [_methods(c) for c in _classes()]
    dataclasses.exec = methods
    assert [_methods(c) for c in _classes()] == reference
    methods.save()
    assert Methods(path).code.keys() == methods.code.keys() != set()


def test_an_unwritable_folder_keeps_nothing(folder):
    blocked = folder / "file"
    blocked.write_text("not a folder")
    methods = Methods(blocked / "sub" / "table.marshal")
    dataclasses.exec = methods
    _classes()
    methods.save()  # no error, nothing written
    assert sorted(p.name for p in folder.iterdir()) == ["file"]


def test_past_max_texts_a_save_keeps_what_its_run_used(folder, monkeypatch):
    """Texts of classes since edited do not pile up: past the cap, the table written is the
    run's own texts."""
    path = folder / "table.marshal"
    stale = {f"def __create_fn__():\n def f{i}(self):\n  return {i}\n return f{i}":
             compile(f"x = {i}", "<string>", "exec") for i in range(30)}
    code_cache.write(path, stale)
    monkeypatch.setattr(dataclass_code, "MAX_TEXTS", 40)
    methods = Methods(path)
    assert len(methods.code) == 30
    dataclasses.exec = methods
    _classes()
    used = set(methods.used)
    assert len(methods.code) == 30 + methods.compiled > 40 and used.isdisjoint(stale)
    methods.save()
    assert Methods(path).code.keys() == used  # the stale thirty left out


def test_the_console_script_keeps_its_commands_table(tmp_path):
    """``napkin call`` through the console script (:func:`napkin.cli.main.run`), twice: the
    first process writes the ``call`` table, the second finds every text in it and writes
    nothing; a program that imports napkin keeps the builtin ``exec``."""
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from napkin import code_cache
        code_cache.FOLDER = Path({str(tmp_path)!r})
        import dataclasses
        from napkin.cli import main
        assert "exec" not in vars(dataclasses)
        sys.argv = ["napkin", "call", "llama-2-7b", "--new", "8", "--gpu", "h100-sxm"]
        main.run()
    """)
    stamps = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert "decode" in done.stdout.lower()
        (saved,) = tmp_path.glob("dataclass-methods.call.*.marshal")
        stamps.append(saved.stat().st_mtime_ns)
    assert stamps[0] == stamps[1]
    table = marshal.loads(saved.read_bytes())
    assert len(table) > 100 and all(text.startswith("def __create_fn__(") for text in table)
