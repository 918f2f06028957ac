"""Quantization: calibration, QDQ import, and the integer constants of each op."""
