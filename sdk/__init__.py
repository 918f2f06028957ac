"""cuvil-sdk: compile ONNX models into dependency-free C for microcontrollers and edge boards."""
from pathlib import Path

__version__ = "0.1.0"

PACKAGE_DIR = Path(__file__).resolve().parent
