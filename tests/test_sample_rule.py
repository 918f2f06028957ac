"""One rule for samples (issue 39, README "Samples"): `run`'s outputs file, compile()/build().run
and the Python runtime take each input as S, (N, *S) or (N, *S[1:]) and return every output as
(N, *its shape), stacked, so a state output is fed back as the next input unchanged. Host-only:
the runtime's sample handling is checked without a library."""
from __future__ import annotations

import numpy as np
import pytest

from cuvil_sdk.data import stack_samples, with_sample_axis, write_outputs
from cuvil_sdk.errors import ModelError
from cuvil_sdk.runtime import Model

AUDIO, STATE = (1, 576), (2, 1, 128)


def fake_model() -> Model:
    """A runtime Model with a Silero-like manifest and no library behind it: enough for _batches."""
    model = Model.__new__(Model)
    entry = {"dtype": "float32", "scale": 0.01, "zero_point": 0}
    model.manifest = {"inputs": [{**entry, "name": "audio", "shape": list(AUDIO)},
                                 {**entry, "name": "state", "shape": list(STATE)}],
                      "outputs": [{**entry, "name": "prob", "shape": [1, 1]},
                                  {**entry, "name": "stateN", "shape": list(STATE)}]}
    return model


def test_outputs_file_stacks_samples_of_a_state(tmp_path):
    """Two samples of a (2, 1, 128) state are (2, 2, 1, 128), not (4, 1, 128) as concatenation gave."""
    rng = np.random.default_rng(0)
    samples = [{"prob": rng.random((1, 1)), "stateN": rng.random(STATE)} for _ in range(2)]
    write_outputs(tmp_path / "out.npz", ["prob", "stateN"], samples)
    got = np.load(tmp_path / "out.npz")
    assert got["stateN"].shape == (2, *STATE) and got["prob"].shape == (2, 1, 1)
    assert np.array_equal(got["stateN"][1], samples[1]["stateN"])
    # the state output, as written, is the data of the state input for N samples, unchanged
    assert with_sample_axis(got["stateN"], STATE).shape == (2, *STATE)
    assert stack_samples(["prob"], samples)["prob"].shape == (2, 1, 1)


def test_runtime_takes_each_input_in_its_own_form():
    """(N, 576) audio for a (1, 576) input beside an (N, 2, 1, 128) state: what `run` accepts."""
    model = fake_model()
    arrays, sampled = model._batches({"audio": np.zeros((3, 576), np.float32),
                                      "state": np.zeros((3, *STATE), np.float32)}, [np.dtype(np.float32)] * 2)
    assert sampled and [a.shape for a in arrays] == [(3, *AUDIO), (3, *STATE)]
    arrays, sampled = model._batches({"audio": np.zeros(AUDIO, np.float32),
                                      "state": np.zeros(STATE, np.float32)}, [np.dtype(np.float32)] * 2)
    assert not sampled and [a.shape for a in arrays] == [(1, *AUDIO), (1, *STATE)]


def test_runtime_errors_name_the_shapes_passed():
    model = fake_model()
    with pytest.raises(ModelError) as e:
        model._batches({"audio": np.zeros((3, 576), np.float32), "state": np.zeros((2, *STATE), np.float32)},
                       [np.dtype(np.float32)] * 2)
    message = str(e.value)
    assert "'audio' (3, 576): 3" in message and "'state' (2, 2, 1, 128): 2" in message
    assert "(3, 1, 576)" not in message  # never a shape the caller did not pass
    with pytest.raises(ModelError, match=r"input 'state' has shape \(4, 1, 128\), expected"):
        model._batches({"audio": np.zeros((2, 576), np.float32), "state": np.zeros((4, 1, 128), np.float32)},
                       [np.dtype(np.float32)] * 2)
