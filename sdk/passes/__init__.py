"""Graph rewrites. Each pass is a function Graph -> None that keeps the graph's meaning;
`optimize` runs them in order. Two run in the frontend before shape inference instead
(`frontend.loader.load_model`): layers_1d_to_2d and compare_select_to_min_max, which turns a
run-time comparison that shape inference would refuse into Max / Min."""
from __future__ import annotations

from ..ir import Graph
from .batchnorm import fold_batchnorm
from .cleanup import remove_identities
from .compare_select import compare_select_to_min_max
from .constant_folding import fold_constants
from .conv_bias import fold_conv_bias
from .fuse_activation import fuse_activations
from .gemm import gemm_to_fc_form
from .layout import to_channels_last
from .matmul import matmul_to_2d
from .pool_nd import pools_to_2d
from .reduce_mean import reduce_mean_to_global_pool
from .variadic import split_variadic

PIPELINE = [split_variadic, remove_identities, fold_constants, gemm_to_fc_form, matmul_to_2d, pools_to_2d,
            reduce_mean_to_global_pool, fold_conv_bias, fold_batchnorm, fuse_activations, to_channels_last]


def optimize(g: Graph) -> None:
    for step in PIPELINE:
        step(g)
    g.remove_unused()


__all__ = ["PIPELINE", "optimize", "fold_batchnorm", "remove_identities", "fold_constants", "fuse_activations",
           "to_channels_last", "reduce_mean_to_global_pool", "gemm_to_fc_form", "pools_to_2d", "matmul_to_2d",
           "split_variadic", "compare_select_to_min_max", "fold_conv_bias"]
