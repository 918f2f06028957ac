/* CMSDK APB UART0 console: polled transmit (fault reports, the demo harness) and a receiver
 * that sleeps in WFI between bytes (the serial test harness).
 * Registers per the ARM CMSDK technical reference: DATA, STATE, CTRL, INTSTATUS, BAUDDIV. */
#include "uart.h"

/* The bootloader's build (sdk/flash/bootloader.py) passes the board's UART0 and its receive
 * interrupt line as BL_UART_BASE and BL_UART_RX_IRQ; an application gets the board's UART0 as
 * CUVIL_UART0_BASE (board key peripherals.uart0, from the SConscript: mps2-an505 and mps3-an547
 * have it elsewhere), else it is built for mps2-an500. */
#ifdef BL_UART_BASE
#define UART0_BASE BL_UART_BASE
#define RX_IRQ_BIT (1u << BL_UART_RX_IRQ)
#else
#ifdef CUVIL_UART0_BASE
#define UART0_BASE CUVIL_UART0_BASE
#else
#define UART0_BASE 0x40004000u
#endif
#define RX_IRQ_BIT (1u << 0) /* mps2-an500: UART0 receive is NVIC line 0 (the serial harness's wake-up) */
#endif
#define UART_DATA (*(volatile uint32_t *)(UART0_BASE + 0x00u))
#define UART_STATE (*(volatile uint32_t *)(UART0_BASE + 0x04u))
#define UART_CTRL (*(volatile uint32_t *)(UART0_BASE + 0x08u))
#define UART_INTSTATUS (*(volatile uint32_t *)(UART0_BASE + 0x0Cu))
#define UART_BAUDDIV (*(volatile uint32_t *)(UART0_BASE + 0x10u))

#define STATE_TX_FULL 0x1u
#define STATE_RX_FULL 0x2u
#define STATE_OVERRUNS 0xCu /* TX and RX overrun, write 1 to clear */
#define CTRL_TX_ENABLE 0x1u
#define CTRL_RX_ENABLE 0x2u
#define CTRL_RX_INT_ENABLE 0x8u
#define INT_RX 0x2u /* write 1 to clear */

#define NVIC_ISER0 (*(volatile uint32_t *)0xE000E100u)
#define NVIC_ICER0 (*(volatile uint32_t *)0xE000E180u)
#define NVIC_ICPR0 (*(volatile uint32_t *)0xE000E280u)

void uart_init(void)
{
    UART_BAUDDIV = 217u; /* 25 MHz / 115200; the smallest legal value is 16 */
    UART_CTRL = CTRL_TX_ENABLE;
}

void uart_putc(char c)
{
    while (UART_STATE & STATE_TX_FULL) {
    }
    UART_DATA = (uint32_t)(unsigned char)c;
}

#include "uart_text.h"

/* The receiver wakes the core from WFI through its interrupt, which is never taken: PRIMASK
 * stays set from uart_rx_begin() to uart_rx_end(), and the line is disabled and cleared
 * before PRIMASK is cleared, so no handler is needed. The interrupt is cleared before DATA
 * is read: the next byte can only arrive once DATA was read, and its interrupt then stays
 * pending, so no wake-up is lost. Under QEMU the sleeping core leaves the host's CPU to
 * QEMU's I/O thread and to the host side (the serial harness, the bootloader). */
void uart_rx_begin(void)
{
    __asm__ volatile("cpsid i" ::: "memory");
    UART_STATE = STATE_OVERRUNS;
    UART_CTRL = CTRL_TX_ENABLE | CTRL_RX_ENABLE | CTRL_RX_INT_ENABLE;
    NVIC_ISER0 = RX_IRQ_BIT;
}

uint8_t uart_getc(void)
{
    while ((UART_STATE & STATE_RX_FULL) == 0u) {
        __asm__ volatile("wfi" ::: "memory");
    }
    UART_INTSTATUS = INT_RX;
    NVIC_ICPR0 = RX_IRQ_BIT;
    return (uint8_t)UART_DATA;
}

void uart_rx_end(void)
{
    uart_reset();
    __asm__ volatile("dsb\n\tisb\n\tcpsie i" ::: "memory");
}

void uart_reset(void)
{
    while ((UART_STATE & STATE_TX_FULL) != 0u) { /* what was sent last leaves first */
    }
    UART_CTRL = CTRL_TX_ENABLE;
    NVIC_ICER0 = RX_IRQ_BIT;
    UART_INTSTATUS = INT_RX;
    NVIC_ICPR0 = RX_IRQ_BIT;
}
