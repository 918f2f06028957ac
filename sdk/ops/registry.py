"""The op registry: every supported ONNX op is registered exactly once, by its family module."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Node, QParams
from ..kernels.contract import KernelCall


class OpDef:
    """One op: attribute defaults, shape inference, float and integer references, int8 rule,
    and the lowering to a C kernel call. Family modules subclass this and `@register` it.

    `check` raises ModelError for what we do not support (its docstring style follows Vela:
    the message is what the user reads).
    """

    op_type: str = ""
    defaults: dict[str, Any] = {}
    summary: str = ""
    # How the output's quantization parameters are chosen: "calibrated" from observed
    # ranges, or "same" as input 0 (data movement and max pooling do not rescale).
    output_qparams: str = "calibrated"
    # An alias op's output shares its input's memory (Reshape, Flatten, ...).
    alias: bool = False
    # The int8 rule in a few words, for SUPPORTED_OPS.md and `cuvil-sdk ops`, where the two
    # attributes above do not say it ("" = what they say: int8_rule_text)
    int8_rule: str = ""
    # Whether the op takes integer or bool tensors computed at run time (indices, token ids,
    # masks; ir.INTEGER_DTYPES). The frontend refuses such an input of any other op, naming
    # the node and the tensor; an op that takes them says which, in `check`, and gives its
    # outputs' element types in `dtypes`.
    integer_inputs: bool = False
    # Inputs whose type only the op reads, never their values (CastLike's second): a node whose
    # other inputs are constants is evaluated at compile time
    type_only_inputs: tuple[int, ...] = ()

    def attr(self, node: Node, key: str) -> Any:
        return node.attrs.get(key, self.defaults.get(key))

    def check(self, node: Node, g: Graph) -> None:
        """Raise ModelError when the node uses something this op does not support."""

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        raise NotImplementedError

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        """The element types of the outputs (numpy names), asked after `infer`: float32 unless
        the op computes integers or bool (ir.INTEGER_DTYPES)."""
        return ["float32"] * len(node.outputs)

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def qparams_rule(self, node: Node, g: Graph) -> str:
        """This node's `output_qparams` ("calibrated" or "same"): ops whose rule depends on the
        node (a Cast from integers is calibrated, one between floats keeps its input's) say so."""
        return self.output_qparams

    def fixed_qparams(self, node: Node, g: Graph) -> QParams | None:
        """Output quantization an op imposes regardless of calibration (e.g. Softmax)."""
        return None

    def quantize(self, node: Node, g: Graph) -> None:
        """Compute node.q (integer constants) from the qparams of inputs and outputs."""

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def mixes_samples(self, node: Node, g: Graph) -> bool:
        """Whether the layer reads across axis 0, so samples stacked there would change each
        other's results (the batched reference, reference/batched.py, then runs one at a
        time). Conservative: an `axis`/`axes` attribute that names axis 0, or a `perm` that
        moves it; ops whose axis 0 is not the sample axis (recurrent: time) say so."""
        rank = len(g.tensors[node.inputs[0]].shape) if node.inputs and node.inputs[0] in g.tensors else 1
        axes = node.attrs.get("axes", [])
        axes = list(axes) + ([node.attrs["axis"]] if "axis" in node.attrs else [])
        if any(int(a) % max(rank, 1) == 0 for a in axes):
            return True
        perm = node.attrs.get("perm")
        return perm is not None and int(perm[0]) != 0

    def macs(self, node: Node, g: Graph) -> int:
        """Multiply-accumulates per inference (0 for ops that do none), for reports."""
        return 0

    def lower(self, node: Node, g: Graph, precision: str) -> KernelCall | list[KernelCall]:
        """The C kernel call(s) the node runs: checked calls of portable kernels, with their
        arguments (Buf, Weight, numbers), as the kernel contract (sdk/kernels) declares them."""
        raise NotImplementedError


REGISTRY: dict[str, OpDef] = {}


def register(cls: type[OpDef]) -> type[OpDef]:
    if cls.op_type in REGISTRY:
        raise RuntimeError(f"op {cls.op_type} registered twice")
    REGISTRY[cls.op_type] = cls()
    return cls


def get_op(op_type: str) -> OpDef:
    return REGISTRY[op_type]


def int8_rule_text(op: OpDef) -> str:
    """The int8 rule of an op in a few words (SUPPORTED_OPS.md, `cuvil-sdk ops`)."""
    if op.int8_rule:
        return op.int8_rule
    return "alias (no code)" if op.alias else "keeps input scale" if op.output_qparams == "same" else "requantized"


def supported_ops() -> list[str]:
    return sorted(t for t in REGISTRY if not t.startswith("_"))
