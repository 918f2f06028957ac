/* CMSDK APB UART0 console (polled, transmit only): enough to report a fault. */
#ifndef CUVIL_UART_H
#define CUVIL_UART_H

#include <stdint.h>

void uart_init(void);
void uart_putc(char c);
void uart_puts(const char *s);
void uart_put_hex(uint32_t value);      /* "0x" and 8 hex digits */
void uart_put_dec(uint32_t value);

#endif
