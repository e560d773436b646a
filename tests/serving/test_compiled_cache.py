"""The compiled core's caches are dropped together once any of their sources changed
(:mod:`napkin.serving.compiled_cache`): a cached caller would otherwise run an old callee."""

from napkin.serving import compiled_cache


def _files(folder, names):
    for name in names:
        (folder / name).write_text("x")


def test_caches_written_for_other_sources_are_dropped_and_the_marker_renewed(tmp_path):
    ours = ["compiled_core.run_core-115.py311.nbi", "compiled_core.run_core-115.py311.1.nbc",
            "series._line_sum-133.py311.nbi"]
    theirs = ["series.cpython-311.pyc", "other.f-1.py311.nbi"]
    _files(tmp_path, ours + theirs)
    (tmp_path / compiled_cache.MARKER).write_text("old")
    compiled_cache._refresh(tmp_path, {"compiled_core", "series"}, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*theirs, compiled_cache.MARKER])
    assert (tmp_path / compiled_cache.MARKER).read_text() == "new"


def test_caches_written_for_these_sources_stay(tmp_path):
    _files(tmp_path, ["compiled_core.run_core-115.py311.nbi"])
    (tmp_path / compiled_cache.MARKER).write_text("same")
    compiled_cache._refresh(tmp_path, {"compiled_core"}, "same")
    assert (tmp_path / "compiled_core.run_core-115.py311.nbi").exists()


def test_a_folder_without_a_marker_is_refreshed_and_an_unwritable_one_left(tmp_path):
    _files(tmp_path, ["compiled_heap.push-40.py311.nbi"])
    compiled_cache._refresh(tmp_path, {"compiled_heap"}, "d")
    assert [p.name for p in tmp_path.iterdir()] == [compiled_cache.MARKER]
    deeper = tmp_path / "missing" / "deeper"
    compiled_cache._refresh(deeper, {"x"}, "d")
    assert (deeper / compiled_cache.MARKER).read_text() == "d"
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    compiled_cache._refresh(blocked / "sub", {"x"}, "d")  # (cannot be made: no error)
    assert blocked.read_text() == "not a folder"
