from pathlib import Path

from cuvil_sdk.ops import docs, supported_ops

ROOT = Path(__file__).resolve().parents[1]


def test_supported_ops_md_is_generated_from_the_registry():
    assert (ROOT / "SUPPORTED_OPS.md").read_text() == docs.render()


def test_registry_has_the_ops_the_compiler_promises():
    required = ["Conv", "Gemm", "MatMul", "Add", "Mul", "Concat", "MaxPool", "AveragePool", "GlobalAveragePool",
                "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Pad", "Relu", "Clip", "LeakyRelu",
                "Sigmoid", "HardSwish", "Softmax", "BatchNormalization", "Dropout", "Identity", "Constant"]
    assert set(required) <= set(supported_ops())
