/* int8 reductions by code (sdk/ops/reduce.py), one thread per output value (the portable
 * reduce_s8's integer rule; L2 by an IEEE sqrtf, nvcc -prec-sqrt=true). */
CUVIL_KERNEL reduce_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int d0, int d1, int d2, int d3, int r0,
                       int r1, int r2, int r3, int code, int32_t zx, int32_t mult, int32_t shift, int32_t zy,
                       float scale)
{
    const int o0 = r0 ? 1 : d0, o1 = r1 ? 1 : d1, o2 = r2 ? 1 : d2, o3 = r3 ? 1 : d3;
    const int k0 = r0 ? d0 : 1, k1 = r1 ? d1 : 1, k2 = r2 ? d2 : 1, k3 = r3 ? d3 : 1;
    const int t = cuvil_index();
    if (t >= o0 * o1 * o2 * o3) return;
    const int i3 = t % o3, i2 = t / o3 % o2, i1 = t / (o3 * o2) % o1, i0 = t / (o3 * o2 * o1);
    const long s0 = (long)d1 * d2 * d3, s1 = (long)d2 * d3, s2 = d3;
    const int8_t *x = in + i0 * s0 + i1 * s1 + i2 * s2 + i3;
    int32_t acc = code == 2 || code == 3 ? x[0] - zx : 0;
    for (int j0 = 0; j0 < k0; j0++) for (int j1 = 0; j1 < k1; j1++)
        for (int j2 = 0; j2 < k2; j2++) for (int j3 = 0; j3 < k3; j3++) {
            const int32_t v = x[j0 * s0 + j1 * s1 + j2 * s2 + j3] - zx;
            switch (code) {
            case 2: if (v > acc) acc = v; break;
            case 3: if (v < acc) acc = v; break;
            case 5: case 7: acc += v * v; break;
            case 6: acc += v < 0 ? -v : v; break;
            default: acc += v; break;
            }
        }
    out[t] = code == 7 ? cuvil_quantize(sqrtf((float)acc), scale, zy) : cuvil_requant(acc, mult, shift, zy, -128, 127);
}
