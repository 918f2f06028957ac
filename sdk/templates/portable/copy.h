/* Byte copy (no libc: freestanding targets). */
static void copy(const void *in, void *out, int nbytes)
{
    const uint8_t *s = (const uint8_t *)in;
    uint8_t *d = (uint8_t *)out;
    if (s == d) return;
    for (int i = 0; i < nbytes; i++) d[i] = s[i];
}
