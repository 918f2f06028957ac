"""The emulated runners' hang deadline grows with the model's multiply-adds: a small model keeps
the few seconds a sample that catch a hung harness quickly, ResNet-50 (4.1 G MACs) gets minutes."""
from cuvil_sdk.runners.linux_qemu import SECONDS_PER_SAMPLE, SLOWEST_MACS_PER_S, deadline_s


def info_with(macs: list[int]) -> dict:
    return {"layers": [{"index": i, "macs": m} for i, m in enumerate(macs)]}


def test_small_model_keeps_the_per_sample_allowance():
    assert deadline_s(info_with([1000, 0]), 4, 0) < 30 + 4 * SECONDS_PER_SAMPLE + 1


def test_big_model_gets_its_inference_time_per_sample_and_timed_repeat():
    macs = 4_100_000_000
    one = macs / SLOWEST_MACS_PER_S
    assert deadline_s(info_with([macs]), 2, 10) == 30 + 2 * (SECONDS_PER_SAMPLE + one) + 10 * one
    assert deadline_s(info_with([macs]), 2, 10) > 600  # ResNet-50's emulated GPU path took 81 s here


def test_layers_without_macs_count_nothing():
    assert deadline_s({"layers": [{"index": 0, "macs": None}]}, 1, 0) == 30 + SECONDS_PER_SAMPLE
