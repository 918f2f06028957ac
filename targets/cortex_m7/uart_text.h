/* The console's text output, the same on every Cortex-M7 board: strings and numbers written
 * through the driver's uart_putc. Each console driver (uart.c on QEMU's CMSDK UART0,
 * ../nucleo_f767zi/usart3.c on the STM32F767's USART3) includes it once, after its uart_putc,
 * so that the two drivers differ only in their registers. */
#ifndef CUVIL_UART_TEXT_H
#define CUVIL_UART_TEXT_H

#include "uart.h"

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

#endif
