/* Cortex-M start-up for QEMU's mps2-an500 (M7), mps2-an386 (M4), mps2-an505 (M33) and mps3-an547
 * (M55), and real parts with the same cores (the boards of targets/cortex_m4, cortex_m33, cortex_m55
 * build this file; their memory map and UART are board data):
 * vector table, reset handler, and fault handlers that report on UART0 and end the
 * run through semihosting with a non-zero exit code, so that the host sees the failure.
 * Built with --specs=rdimon.specs -nostartfiles: newlib's own crt0 faults on this
 * machine model (docs/internals.md, Cortex-M start-up), so this file replaces it. The image links
 * nothing of newlib that allocates: no stdio, no exit(), no atexit. */
#include <stdint.h>

#include "semihost.h"
#include "uart.h"

#define FAULT_EXIT_CODE 3 /* the host maps a non-zero exit to TargetError */

#define SCB_CCR (*(volatile uint32_t *)0xE000ED14u)
#define SCB_SHCSR (*(volatile uint32_t *)0xE000ED24u)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2Cu)
#define SCB_MMFAR (*(volatile uint32_t *)0xE000ED34u)
#define SCB_BFAR (*(volatile uint32_t *)0xE000ED38u)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define MPU_TYPE (*(volatile uint32_t *)0xE000ED90u)
#define MPU_CTRL (*(volatile uint32_t *)0xE000ED94u)
#define MPU_RNR (*(volatile uint32_t *)0xE000ED98u)
#define MPU_RBAR (*(volatile uint32_t *)0xE000ED9Cu)
#define MPU_RASR (*(volatile uint32_t *)0xE000EDA0u)

#define CCR_DIV_0_TRP (1u << 4)
#define SHCSR_FAULTS_ENABLE ((1u << 16) | (1u << 17) | (1u << 18)) /* MemManage, Bus, Usage */
/* The lowest bytes of the stack are a no-access MPU region: an overflow faults at once
 * instead of writing below RAM (which mps2-an500 ignores). linker.ld aligns the stack to it.
 * Armv8-M (Cortex-M33, M55) has a stack limit register instead, MSPLIM, set at the guard's top:
 * an overflow is a UsageFault (STKOF) before anything is written below it, without the MPU
 * (whose v8-M register format differs). */
#define STACK_GUARD_BYTES 256u
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
#define STACK_LIMIT_REGISTER 1
#define CFSR_STKOF (1u << 20) /* UsageFault: the stack limit was crossed */
#else
#define CFSR_STKOF 0u
#endif
#define CFSR_STACKING_ERRORS ((1u << 4) | (1u << 12) | CFSR_STKOF) /* MSTKERR, STKERR (, STKOF) */
#define MPU_RASR_GUARD ((1u << 28) /* XN */ | (0u << 24) /* AP: no access */ | (7u << 1) /* 2^(7+1) B */ | 1u)

/* Defined by linker.ld. */
extern uint32_t __stack_bottom[], __stack_top[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];

int main(void);
/* Weak, so that it is called only when something else (newlib stdio through rdimon)
 * is linked in; the harness itself uses direct semihosting and needs no set-up. */
extern void initialise_monitor_handles(void) __attribute__((weak));

/* Expected by newlib's __libc_init_array/__libc_fini_array if anything links them;
 * the lite profile has no constructors or destructors. */
void _init(void) {}
void _fini(void) {}

void Reset_Handler(void) __attribute__((noreturn));
void Reset_Handler(void)
{
    /* Full access to CP10/CP11 before any floating-point instruction (else NOCP fault). */
    SCB_CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    for (uint32_t *src = _sidata, *dst = _sdata; dst < _edata;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = _sbss; dst < _ebss;) {
        *dst++ = 0u;
    }

    /* Report MemManage/Bus/Usage faults by name instead of all as HardFault, and trap
     * integer division by zero (the core otherwise returns 0 silently). */
    SCB_SHCSR |= SHCSR_FAULTS_ENABLE;
    SCB_CCR |= CCR_DIV_0_TRP;
#ifdef STACK_LIMIT_REGISTER
    __asm__ volatile("msr msplim, %0" ::"r"((uint32_t)__stack_bottom + STACK_GUARD_BYTES));
#else
    if ((MPU_TYPE >> 8) & 0xFFu) { /* the core has MPU regions */
        MPU_RNR = 0u;
        MPU_RBAR = (uint32_t)__stack_bottom;
        MPU_RASR = MPU_RASR_GUARD;
        MPU_CTRL = (1u << 2) | 1u; /* PRIVDEFENA (default map elsewhere) | ENABLE */
        __asm__ volatile("dsb\n\tisb" ::: "memory");
    }
#endif
    uart_init();
    if (initialise_monitor_handles) {
        initialise_monitor_handles();
    }
    /* Not newlib's exit(): it links atexit and with it malloc. Nothing is buffered
     * (the harness writes through semihosting directly), so there is nothing to flush. */
    sh_exit(main());
}

static const char *const fault_names[] = {"NMI", "HardFault", "MemManage", "BusFault", "UsageFault",
                                          "unexpected interrupt"};

/* The fault handlers run on a stack of their own: the main one may have overflowed, and
 * the faulting frame on it must stay intact while it is reported. */
#define FAULT_STACK_BYTES 256
#define STR_(x) #x
#define STR(x) STR_(x)
uint64_t fault_stack[FAULT_STACK_BYTES / 8] __attribute__((used));

/* Called by the handlers below on the fault stack; frame is the stacked r0-r3, r12, lr, pc, xpsr. */
void fault_report(const uint32_t *frame, uint32_t kind) __attribute__((noreturn, used));
void fault_report(const uint32_t *frame, uint32_t kind)
{
    uint32_t cfsr = SCB_CFSR;
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    uart_puts("\r\nFAULT ");
    uart_puts(fault_names[kind]);
    uart_puts(" IPSR=");
    uart_put_dec(ipsr);
    uart_puts(" CFSR=");
    uart_put_hex(cfsr);
    uart_puts(" HFSR=");
    uart_put_hex(SCB_HFSR);
    uart_puts(" MMFAR=");
    uart_put_hex(SCB_MMFAR);
    uart_puts(" BFAR=");
    uart_put_hex(SCB_BFAR);
    uintptr_t at = (uintptr_t)frame;
    uart_puts(" SP=");
    uart_put_hex((uint32_t)at);
    /* A frame outside the stack (overflow) or a failed exception entry leaves nothing to read. */
    if ((cfsr & CFSR_STACKING_ERRORS) == 0u && at >= (uintptr_t)__stack_bottom + STACK_GUARD_BYTES &&
        at + 32u <= (uintptr_t)__stack_top) {
        uart_puts(" PC=");
        uart_put_hex(frame[6]);
        uart_puts(" LR=");
        uart_put_hex(frame[5]);
    } else {
        uart_puts(" PC=unknown");
        if (at < (uintptr_t)__stack_bottom + STACK_GUARD_BYTES || (cfsr & CFSR_STKOF) != 0u) {
            uart_puts(" (stack overflow)");
        }
    }
    uart_puts("\r\n");
    sh_exit(FAULT_EXIT_CODE);
}

/* Each handler picks the stack the frame was pushed on (EXC_RETURN bit 2), moves to the
 * fault stack and reports; none of them returns. */
#define FAULT_HANDLER(handler, kind)                                                               \
    void handler(void) __attribute__((naked));                                                     \
    void handler(void)                                                                             \
    {                                                                                              \
        __asm__ volatile("tst lr, #4\n\t"                                                          \
                         "ite eq\n\t"                                                              \
                         "mrseq r0, msp\n\t"                                                       \
                         "mrsne r0, psp\n\t"                                                       \
                         "ldr r1, =fault_stack + " STR(FAULT_STACK_BYTES) "\n\t"                   \
                         "msr msp, r1\n\t"                                                         \
                         "movs r1, #" #kind "\n\t"                                                 \
                         "b fault_report\n\t"                                                      \
                         ".ltorg");                                                                \
    }

FAULT_HANDLER(NMI_Handler, 0)
FAULT_HANDLER(HardFault_Handler, 1)
FAULT_HANDLER(MemManage_Handler, 2)
FAULT_HANDLER(BusFault_Handler, 3)
FAULT_HANDLER(UsageFault_Handler, 4)
FAULT_HANDLER(Default_Handler, 5)

/* Weak: the harness defines SysTick_Handler to count timer wraps. */
void SVC_Handler(void) __attribute__((weak, alias("Default_Handler")));
void DebugMon_Handler(void) __attribute__((weak, alias("Default_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

#define NUM_IRQS 32 /* external interrupts of QEMU's mps2-an500 NVIC */
typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used)) const vector_t vector_table[16 + NUM_IRQS] = {
    (vector_t)__stack_top, Reset_Handler, NMI_Handler, HardFault_Handler, MemManage_Handler,
    BusFault_Handler, UsageFault_Handler, 0, 0, 0, 0, SVC_Handler, DebugMon_Handler, 0,
    PendSV_Handler, SysTick_Handler,
    [16 ... 16 + NUM_IRQS - 1] = Default_Handler,
};
