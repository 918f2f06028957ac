/* The shared start-up code (../cortex_m7/startup.c) ends a run with sh_exit(): under QEMU
 * a semihosting call that stops the emulator with an exit code. A real board has no host
 * to stop (and a semihosting BKPT without a debugger attached would fault again), so here
 * it just stops: interrupts off, the core asleep. The fault report is already on USART3. */
#include "../cortex_m7/semihost.h"

void sh_exit(int code)
{
    (void)code;
    __asm__ volatile("cpsid i" ::: "memory");
    for (;;) {
        __asm__ volatile("wfi");
    }
}
