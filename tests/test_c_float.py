"""c_float: the C float literals of scales and fp32 weights are exact. The host compiler reads
each literal back (as C99 and as C++11, where hex floats do not exist) and the program checks
its bits against the float32 the SDK meant. gcc/g++ missing fails the test, never skips."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cuvil_sdk.codegen.lowering import c_float

EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 0.00392156886, 1e-4, 9.9999e-5, 1e7, 9999999.0, 16777217.0,
                  np.finfo(np.float32).max, -np.finfo(np.float32).max, np.finfo(np.float32).tiny,
                  np.finfo(np.float32).smallest_subnormal, 3 * np.finfo(np.float32).smallest_subnormal],
                 dtype=np.float32)


def values() -> np.ndarray:
    """Edge cases, float32s of every exponent (random bit patterns, subnormals included) and
    scale-like values."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 0x7F800000, 6000, dtype=np.uint32) | (rng.integers(0, 2, 6000, dtype=np.uint32) << 31)
    scales = (rng.random(2000) / 255).astype(np.float32)
    return np.concatenate([EDGES, bits.view(np.float32), scales])


def program(vals: np.ndarray) -> str:
    literals = ",\n".join(c_float(float(v)) for v in vals)
    want = ",\n".join(f"0x{b:08x}u" for b in vals.view(np.uint32).tolist())
    return f"""#include <stdint.h>
#include <stdio.h>
#include <string.h>
static const float got[] = {{
{literals}
}};
static const uint32_t want[] = {{
{want}
}};
int main(void)
{{
    int bad = 0;
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {{
        uint32_t b;
        memcpy(&b, &got[i], 4);
        if (b != want[i]) {{ printf("%u: %08x != %08x\\n", i, (unsigned)b, (unsigned)want[i]); bad++; }}
    }}
    return bad != 0;
}}
"""


@pytest.mark.parametrize("compiler,std", [("gcc", "c99"), ("g++", "c++11")])
def test_c_float_literals_read_back_bit_identical(tmp_path: Path, compiler: str, std: str):
    tool = shutil.which(compiler)
    assert tool, f"{compiler} not found: run scripts/setup.sh"
    vals = values()
    src = tmp_path / ("t.cpp" if compiler == "g++" else "t.c")
    src.write_text(program(vals))
    build = subprocess.run([tool, f"-std={std}", "-Wall", "-Wextra", "-Werror", "-O0", str(src), "-o",
                            str(tmp_path / "t")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[:2000]
    run = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[:2000]


def test_c_float_literals_are_decimal_and_short():
    for v in values():
        text = c_float(float(v))
        assert text.endswith("f") and "x" not in text and "p" not in text, text
        digits = text.split("e")[0].lstrip("-").replace(".", "").rstrip("f").lstrip("0")
        assert len(digits.rstrip("0")) <= 9, text


def test_c_float_refuses_what_c_cannot_spell():
    for bad in (float("nan"), 1e39, -1e39):  # a finite value beyond float32 is a bug, not an infinity
        with pytest.raises(ValueError, match="no C literal"):
            c_float(bad)


def test_c_float_spells_infinities():
    """+/-inf constants (attention masks) are C99's INFINITY (math.h, included by weights.h)."""
    assert (c_float(np.inf), c_float(-np.inf), c_float(np.float32(-np.inf))) == ("INFINITY", "(-INFINITY)",
                                                                                  "(-INFINITY)")
