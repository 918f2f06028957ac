/* The console UART of the Cortex-M7 boards: transmit (fault reports, the demo harness) and
 * receive (the serial test harness, serial_harness.c.j2). uart.c implements it on QEMU's CMSDK
 * UART0, ../nucleo_f767zi/usart3.c on the STM32F767's USART3; the text output on uart_putc
 * (uart_puts, uart_put_hex, uart_put_dec) is one piece both include, uart_text.h. */
#ifndef CUVIL_UART_H
#define CUVIL_UART_H

#include <stdint.h>

void uart_init(void);
void uart_putc(char c);
void uart_puts(const char *s);
void uart_put_hex(uint32_t value);      /* "0x" and 8 hex digits */
void uart_put_dec(uint32_t value);

/* Receiving: between uart_rx_begin() and uart_rx_end() uart_getc() waits for the next byte
 * (asleep where the board can be woken by the receiver; interrupts are masked meanwhile,
 * and uart_rx_end() enables them again: the harness runs with them on). */
void uart_rx_begin(void);
uint8_t uart_getc(void);
void uart_rx_end(void);
/* Once what was sent has left: the receiver and its interrupt off, the transmitter on
 * (QEMU's CMSDK UART only; PRIMASK untouched). The bootloader hands UART0 over with it. */
void uart_reset(void);

#endif
