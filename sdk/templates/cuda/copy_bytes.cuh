/* Byte copy between two distinct buffers (a copy onto itself is never launched). */
CUVIL_KERNEL copy_bytes(const uint8_t *__restrict__ in, uint8_t *__restrict__ out, int nbytes)
{
    const int i = cuvil_index();
    if (i >= nbytes) return;
    out[i] = in[i];
}
