/* ARM semihosting calls (bkpt 0xAB), used by the harness and the fault handlers.
 * Direct calls instead of newlib stdio keep the whole image free of malloc. */
#ifndef CUVIL_SEMIHOST_H
#define CUVIL_SEMIHOST_H

#include <stddef.h>

#define SH_MODE_RB 1 /* fopen-style modes, as numbered by the semihosting spec */
#define SH_MODE_WB 5

/* Returns a host file handle, or -1. */
int sh_open(const char *path, int mode);
/* Returns the number of bytes NOT transferred (0 means all of them). */
size_t sh_read(int handle, void *buf, size_t len);
size_t sh_write(int handle, const void *buf, size_t len);
int sh_close(int handle);
/* Ends the QEMU process with this exit code (SYS_EXIT_EXTENDED). */
void sh_exit(int code) __attribute__((noreturn));

#endif
