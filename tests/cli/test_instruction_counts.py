"""``serve_speed_vs.py --instructions`` reads callgrind's count, and the count is what the
script says it is: the same from run to run (the figure a noisy machine cannot give)."""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from serve_speed_vs import _run, collected_millions


def test_collected_millions_reads_callgrinds_summary_line():
    stderr = ("==123== Events    : Ir\n==123== Collected : 1559173706\n==123==\n"
              "==123== I   refs:      1,559,173,706\n")
    assert collected_millions(stderr) == 1559.173706
    with pytest.raises(ValueError, match="Collected"):
        collected_millions("==1== no summary\n")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_count_repeats_to_a_tenth_of_a_percent():
    """``python -c pass`` twice under callgrind (hash seed and BLAS threads fixed): a start-up
    of some tens of millions of instructions, the two counts within 0.1 % of each other."""
    runs = [_run(None, ["-c", "pass"], counted=True) for _ in range(2)]
    assert all(done.returncode == 0 for done in runs)
    first, second = (collected_millions(done.stderr) for done in runs)
    assert 5 < first < 500
    assert abs(first - second) <= 1e-3 * first
