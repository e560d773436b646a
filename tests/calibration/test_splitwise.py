"""splitwise-sim's perf_model.csv as measurements."""

import pytest

from napkin.calibration.measurements.read import read_measurements
from napkin.calibration.measurements.splitwise import read_splitwise_csv

HEADER = ("model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,"
          "prompt_time,token_time,e2e_time,tensor_parallel\n")


def test_repeats_are_averaged_and_unknown_rows_skipped(tmp_path):
    path = tmp_path / "perf_model.csv"
    path.write_text(HEADER
                    + "llama2-70b,a100-80gb,512,2,128,1,0.7,400,60,8000,2\n"
                    + "llama2-70b,a100-80gb,512,2,128,1,0.7,430,62,8000,2\n"
                    + "llama2-70b,h100-80gb-pcap,512,2,128,1,0.7,200,40,5000,2\n"
                    + "bloom-176b,a100-80gb,512,2,128,1,0.7,900,90,9000,8\n"
                    + "llama2-70b,h100-80gb,8192,1,128,1,0.7,2000,40,9000,8\n")
    rows = read_splitwise_csv(path)
    assert len(rows) == 1  # pcap, BLOOM and the 8,192 + 128 > 4,096-token row are skipped
    m = rows[0]
    assert (m.model, m.gpu, m.tensor_parallel, m.input_tokens, m.output_tokens) == (
        "llama-2-70b", "a100-80gb-sxm", 2, 512, 128)
    assert m.harness.kind == "burst" and m.harness.num_requests == 2
    assert m.mean_ttft_s == pytest.approx(0.415) and m.mean_tpot_s == pytest.approx(0.061)
    assert read_measurements(path) == rows  # recognized by its columns
    # a late-2023 vLLM; the batch's prompts in one iteration (splitwise-sim times the phase so)
    assert (m.backend, m.backend_version) == ("vllm", "0.2")
    assert m.launch is not None and (m.launch.max_num_seqs, m.launch.max_num_batched_tokens,
                                     m.launch.chunked_prefill) == (2, 1024, False)


def test_a_batchs_prompts_run_in_one_step():
    """Llama-2-70B on 8 H100s, 8 prompts of 512 tokens at once: one prefill step of 4,096 tokens
    (every request's first token at its end), then decode steps of the 8."""
    from napkin.calibration.basis import StepModel
    from napkin.validation.fit import fitted_timer
    from napkin.validation.replay import replay
    from napkin.validation.sets import load_set

    row = next(m for m in load_set("splitwise") if (m.gpu, m.tensor_parallel, m.input_tokens,
                                                    m.harness.num_requests, m.output_tokens)
               == ("h100-sxm", 8, 512, 8, 128))
    r = replay(row, fitted_timer(StepModel.of({"step": 1e-3, "token": 1e-4})), record=True)
    assert r.mean_ttft_s == pytest.approx(1e-3 + 4096 * 1e-4)  # one step of 4,096 tokens
    assert r.mean_tpot_s == pytest.approx(1e-3 + 8 * 1e-4)


def test_bad_time_names_the_column(tmp_path):
    path = tmp_path / "perf_model.csv"
    path.write_text(HEADER + "llama2-70b,a100-80gb,512,2,128,1,0.7,nan,60,8000,2\n")
    with pytest.raises(ValueError, match="prompt_time"):
        read_splitwise_csv(path)
