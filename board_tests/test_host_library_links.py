"""A host library names every library it needs (issue 39: fp32 libraries called expf without
being linked with libm; Python had libm loaded already and hid it, a C program that dlopens the
library failed). A plain C program dlopens the fp32 build with RTLD_NOW and runs it."""
from __future__ import annotations

import subprocess

import numpy as np
import onnxruntime as ort
import pytest

from models import EXAMPLES, cli

pytestmark = pytest.mark.slow

PROGRAM = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    int (*run)(const float *const *, float *const *) = (int (*)(const float *const *, float *const *))dlsym(lib, argv[2]);
    if (!run) { fprintf(stderr, "%s\n", dlerror()); return 3; }
    static float x[3072], y[10];
    if (fread(x, sizeof x, 1, stdin) != 1) return 4;
    const float *in[] = {x};
    float *out[] = {y};
    if (run(in, out) != 0) return 5;
    fwrite(y, sizeof y, 1, stdout);
    return 0;
}
"""


def test_an_fp32_library_loads_in_a_plain_c_program(tmp_path):
    r = cli("build", "--board", "host", "--profile", "standard", "--precision", "fp32", "--model",
            EXAMPLES / "resnet8_fp32.onnx", "-o", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lib = tmp_path / "out" / "build" / "libresnet8_fp32.so"
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert "[libm.so.6]" in needed
    (tmp_path / "main.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-o", str(tmp_path / "main"), str(tmp_path / "main.c"), "-ldl"], check=True)
    x = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
    ran = subprocess.run([str(tmp_path / "main"), str(lib), "resnet8_fp32_run"], input=x.tobytes(),
                         capture_output=True, timeout=60)
    assert ran.returncode == 0, ran.stderr.decode()
    ours = np.frombuffer(ran.stdout, np.float32)
    session = ort.InferenceSession(str(EXAMPLES / "resnet8_fp32.onnx"), providers=["CPUExecutionProvider"])
    reference = session.run(None, {session.get_inputs()[0].name: x})[0].ravel()
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-5)
