"""Data-parallel collectives across nodes in two levels, worked by hand.

Llama-2-7B (6,738,415,616 parameters) with plain data parallelism (DDP: an all-reduce of the
BF16 gradients, 2 B each) on 16 H100 in two nodes of 8: within a node over NVLink 4
(450 GB/s per direction) the ring reduce-scatters and all-gathers 2·7/8 of the gradients; across
the two nodes each GPU sends its 1/8 share over its own 400 Gb/s port (50 GB/s), 2·1/2 of
it — as NCCL's rings use every NIC of a node. One flat ring at the port's speed would send
2·15/16 of the whole buffer at 50 GB/s: 5.9× longer."""

import pytest

from napkin.catalog import load_accelerator, load_model
from napkin.training.flops import TrainShape
from napkin.training.memory import recipe
from napkin.training.parallel import communication
from napkin.training.plan import Cluster, plan_training

PARAMS = 6_738_415_616
GRADS = PARAMS * 2


def test_two_node_all_reduce_by_hand():
    c = communication("ddp", PARAMS, 16, 2, 2, 450e9, per_node=8, inter_node_bytes_per_s=50e9)
    assert c.bytes_per_device == pytest.approx(2 * 7 / 8 * GRADS)
    assert c.inter_node_bytes == pytest.approx(2 * 1 / 2 * GRADS / 8)
    assert c.time_s == pytest.approx(2 * 7 / 8 * GRADS / 450e9 + GRADS / 8 / 50e9)
    flat = 2 * 15 / 16 * GRADS / 50e9
    assert flat / c.time_s == pytest.approx(1.875 / (1.75 / 9 + 0.125), rel=1e-9)


def test_one_node_is_one_ring():
    c = communication("ddp", PARAMS, 8, 2, 2, 450e9)
    assert c.inter_node_bytes == 0
    assert c.time_s == pytest.approx(2 * 7 / 8 * GRADS / 450e9)


def test_the_planner_places_data_parallel_peers_by_node():
    """16 data-parallel ranks at TP 1 on 8-GPU nodes: 8 peers a node, 2 nodes; at TP 8 a
    rank's 2 peers are both on the other node: every byte over the port."""
    m, h100 = load_model("llama-2-7b"), load_accelerator("h100-sxm")
    shape = TrainShape((4096,), 1)
    dp16 = plan_training(m, shape, Cluster(h100, 16, 0, link_bytes_per_s=450e9, mfu=0.5),
                         recipe("adamw"))
    assert dp16.comm.inter_node_bytes == pytest.approx(GRADS / 8)
    tp8 = plan_training(m, shape, Cluster(h100, 2, 0, link_bytes_per_s=450e9, mfu=0.5,
                                          tensor_parallel=8), recipe("adamw"))
    assert tp8.comm.bytes_per_device == 0
    assert tp8.comm.inter_node_bytes == pytest.approx(2 * 1 / 2 * -(-PARAMS // 8) * 2)


def test_an_nvl72_rack_is_one_nvlink_domain(cli):
    """On GB200 the default node is the NVL72 rack: FSDP over 64 GPUs stays on NVLink (no
    bytes over the NICs); on B200 the same 64 GPUs span 8 nodes of 8."""
    import json

    def comm(gpu):
        code, out, err = cli("train", "llama-3.1-8b", "--gpu", gpu, "--devices", "64",
                             "--zero", "3", "--mfu", "0.5", "--format", "json")
        assert code == 0, err
        return json.loads(out)

    nvl72, hgx = comm("gb200"), comm("b200")
    assert nvl72["assumptions"]["gpus_per_node"] == 72
    assert nvl72["communication"]["inter_node_bytes"] == 0
    assert hgx["assumptions"]["gpus_per_node"] == 8
    assert hgx["communication"]["inter_node_bytes"] > 0


def test_tensor_parallelism_across_two_nodes_all_reduces_in_two_levels():
    """TP 16 over two 8-GPU H100 nodes (an unusual layout, but a planner may try it): the TP
    all-reduces run in the same two levels as the data-parallel ones above — 2·7/8 of each
    buffer over NVLink, 2·1/2 of its 1/8 over the port — so their bytes (the ring's 2·15/16)
    see 1.875 / (1.75/450 + 0.125/50) GB/s = 293.5 GB/s, not the port's 50 GB/s alone; at TP 8
    they stay on NVLink (the same rule serving uses: ``allreduce_link_bytes_per_s``)."""
    m, h100 = load_model("llama-2-7b"), load_accelerator("h100-sxm")
    shape = TrainShape((4096,), 1)
    for tp, link in ((16, 1.875 / (1.75 / 450e9 + 0.125 / 50e9)), (8, 450e9)):
        r = plan_training(m, shape, Cluster(h100, 1, 0, link_bytes_per_s=450e9, mfu=0.5,
                                            tensor_parallel=tp), recipe("adamw"))
        assert r.model_parallel.tp_link_bytes_per_s == pytest.approx(link)
