/* The demo harness's built-in sample (bootloader/harness_demo.c.j2): test image 21 of the
 * bundled digits example (sdk/examples/digits_data.npz, x_test[21], an 8x8 "3", pixels in
 * [0, 1]), NCHW float32. board_tests/test_flash_qemu.py checks it against the file. */
#include <stdint.h>

const uint32_t cuvil_demo_sample_index = 21u;
const int32_t cuvil_demo_sample_label = 3;
const uint32_t cuvil_demo_sample_size = 64u;
const float cuvil_demo_sample[64] = {
    0.0f, 0.0f, 0.125f, 0.5625f, 0.8125f, 0.5f, 0.0f, 0.0f,
    0.0f, 0.0625f, 0.875f, 0.6875f, 0.5f, 0.875f, 0.0f, 0.0f,
    0.0f, 0.5625f, 0.875f, 0.0f, 0.875f, 0.375f, 0.0f, 0.0f,
    0.0f, 0.0f, 0.125f, 0.25f, 0.9375f, 0.0f, 0.0f, 0.0f,
    0.0f, 0.0f, 0.0f, 0.375f, 0.75f, 0.75f, 0.125f, 0.0f,
    0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5625f, 0.5625f, 0.0f,
    0.0f, 0.0f, 0.875f, 0.8125f, 0.25f, 0.625f, 0.6875f, 0.0f,
    0.0f, 0.0f, 0.1875f, 0.625f, 0.875f, 0.9375f, 0.3125f, 0.0f,
};
