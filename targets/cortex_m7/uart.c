/* CMSDK APB UART0 console (polled, transmit only): enough to report a fault.
 * Registers per the ARM CMSDK technical reference: DATA, STATE, CTRL, INTSTATUS, BAUDDIV. */
#include "uart.h"

#define UART0_BASE 0x40004000u
#define UART_DATA (*(volatile uint32_t *)(UART0_BASE + 0x00u))
#define UART_STATE (*(volatile uint32_t *)(UART0_BASE + 0x04u))
#define UART_CTRL (*(volatile uint32_t *)(UART0_BASE + 0x08u))
#define UART_BAUDDIV (*(volatile uint32_t *)(UART0_BASE + 0x10u))

#define STATE_TX_FULL 0x1u
#define CTRL_TX_ENABLE 0x1u

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

void uart_puts(const char *s)
{
    while (*s != '\0') {
        uart_putc(*s++);
    }
}

void uart_put_hex(uint32_t value)
{
    uart_puts("0x");
    for (int shift = 28; shift >= 0; shift -= 4) {
        uart_putc("0123456789abcdef"[(value >> shift) & 0xFu]);
    }
}

void uart_put_dec(uint32_t value)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    while (n > 0) {
        uart_putc(digits[--n]);
    }
}
