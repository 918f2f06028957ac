/* ARM semihosting calls (bkpt 0xAB), used by the harness and the fault handlers. */
#include "semihost.h"

#include <stdint.h>

enum {
    SYS_OPEN = 0x01,
    SYS_CLOSE = 0x02,
    SYS_WRITE = 0x05,
    SYS_READ = 0x06,
    SYS_EXIT_EXTENDED = 0x20, /* semihosting v2: A32/T32 may pass an exit code */
};
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static int sh_call(int op, void *args)
{
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = args;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int sh_open(const char *path, int mode)
{
    size_t len = 0;
    while (path[len] != '\0') {
        len++;
    }
    uintptr_t args[3] = {(uintptr_t)path, (uintptr_t)mode, len};
    return sh_call(SYS_OPEN, args);
}

size_t sh_read(int handle, void *buf, size_t len)
{
    uintptr_t args[3] = {(uintptr_t)handle, (uintptr_t)buf, len};
    return (size_t)sh_call(SYS_READ, args);
}

size_t sh_write(int handle, const void *buf, size_t len)
{
    uintptr_t args[3] = {(uintptr_t)handle, (uintptr_t)buf, len};
    return (size_t)sh_call(SYS_WRITE, args);
}

int sh_close(int handle)
{
    uintptr_t args[1] = {(uintptr_t)handle};
    return sh_call(SYS_CLOSE, args);
}

void sh_exit(int code)
{
    uintptr_t args[2] = {ADP_STOPPED_APPLICATION_EXIT, (uintptr_t)code};
    sh_call(SYS_EXIT_EXTENDED, args);
    for (;;) {
        /* not reached: QEMU exits */
    }
}
