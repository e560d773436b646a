"""Device memory as the device reports it (nvidia-smi memory.total), next to marketed GB."""

import json
import sys

import pytest

from napkin.catalog import accelerators, load_accelerator
from napkin.cli.main import main
from napkin.specs.hardware import Accelerator, override

MIB = 2**20


def test_h100_reports_81559_mib():
    # nvidia-smi on an "80GB" H100: memory.total 81559 MiB;
    # torch.cuda.get_device_properties(0).total_memory = 85,520,809,984 bytes.
    acc = load_accelerator("h100-sxm")
    assert acc.device_memory_bytes == 81559 * MIB == 85_520_809_984
    assert acc.memory_bytes == 80e9  # the marketed figure every worked example uses
    assert acc.device_memory_known
    assert "81559" in acc.sources["device_memory"]


@pytest.mark.parametrize(
    ("acc_id", "mib"),
    [
        ("h100-pcie", 81559),
        ("h200", 143771),
        ("a100-80gb-sxm", 81920),
        ("l40s", 46068),
        ("b200", 183359),
        ("b300", 275040),  # nvidia-smi, as aiconfigurator's systems/b300_sxm.yaml records it
    ],
)
def test_reported_device_memory(acc_id, mib):
    acc = load_accelerator(acc_id)
    assert acc.device_memory_bytes == mib * MIB
    assert acc.sources["device_memory"].strip()


def test_known_device_memory_is_sourced_and_near_the_marketed_capacity():
    for acc in accelerators().values():
        if acc.device_memory_known:
            assert acc.sources["device_memory"].strip(), acc.id
            # what CUDA sees is within 10% of the marketed capacity
            assert 0.9 < acc.device_memory_bytes / acc.memory_bytes < 1.1, acc.id
        else:
            assert acc.device_memory_bytes == acc.memory_bytes, acc.id


def test_defaults_to_memory_bytes_when_unknown():
    acc = Accelerator("toy", "toy", 24e9, 1e12, {"bf16": 1e14})
    assert acc.device_memory_bytes == 24e9
    assert not acc.device_memory_known
    assert load_accelerator("h800").device_memory_bytes == 80e9  # no public source read


def test_memory_override_replaces_device_memory():
    acc = override(load_accelerator("h100-sxm"), mem_gb=32)
    assert acc.memory_bytes == acc.device_memory_bytes == 32e9
    assert not acc.device_memory_known
    assert load_accelerator("h100-sxm").device_memory_bytes == 81559 * MIB  # catalog untouched
    kept = override(load_accelerator("h100-sxm"), bw_gbs=1000)
    assert kept.device_memory_bytes == 81559 * MIB
    custom = override(None, mem_gb=24, bw_gbs=500, tflops=100)
    assert custom.device_memory_bytes == 24e9


def test_gpus_json_shows_device_memory(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["napkin", "gpus", "--format", "json"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    rows = {a["id"]: a for a in json.loads(capsys.readouterr().out)["accelerators"]}
    assert rows["h100-sxm"]["device_memory_bytes"] == 85_520_809_984
    assert rows["h100-sxm"]["memory_bytes"] == 80_000_000_000
    assert rows["h100-sxm"]["device_memory_known"] is True
    assert "device_memory" in rows["h100-sxm"]["sources"]
    assert rows["h800"]["device_memory_bytes"] == 80_000_000_000
    assert rows["h800"]["device_memory_known"] is False
