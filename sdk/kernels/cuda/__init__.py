"""The `cuda` kernel set: CUDA kernels (.cuh), templates in sdk/templates/cuda/;
declarations.py declares them, rules.py turns portable calls into launches. Its kernels
run on the GPU beside the board's CPU path, so code generation renders them as a project
output of their own (codegen/cuda.py) rather than into the CPU model."""
from . import declarations, rules  # noqa: F401
