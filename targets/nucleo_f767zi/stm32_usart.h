/* The registers and the polled transmit and receive of an STM32 USART or LPUART, shared by the
 * NUCLEO boards' console drivers (usart3.c here, ../nucleo_l4r5zi/lpuart1.c,
 * ../nucleo_u575zi_q/usart1.c): the F7, L4+ and U5 parts lay them out alike (CR1 0x00, BRR 0x0C,
 * ISR 0x1C, ICR 0x20, RDR 0x24, TDR 0x28). The including driver defines USART_BASE and its own
 * uart_init() (clocks, pins, the baud rate divider); this gives the rest of uart.h's API. */
#ifndef CUVIL_STM32_USART_H
#define CUVIL_STM32_USART_H

#include "../cortex_m7/uart.h"

#define USART_CR1 (*(volatile uint32_t *)(USART_BASE + 0x00u))
#define USART_BRR (*(volatile uint32_t *)(USART_BASE + 0x0Cu))
#define USART_ISR (*(volatile uint32_t *)(USART_BASE + 0x1Cu))
#define USART_ICR (*(volatile uint32_t *)(USART_BASE + 0x20u))
#define USART_RDR (*(volatile uint32_t *)(USART_BASE + 0x24u))
#define USART_TDR (*(volatile uint32_t *)(USART_BASE + 0x28u))
#define ISR_ERRORS 0xFu /* PE, FE, NF, ORE */
#define ISR_RXNE (1u << 5)
#define ISR_TXE (1u << 7)
#define ICR_ERRORS 0xFu /* PECF, FECF, NCF, ORECF */
#define CR1_UE (1u << 0)
#define CR1_RE (1u << 2)
#define CR1_TE (1u << 3)
#define CR1_ENABLE (CR1_TE | CR1_RE | CR1_UE) /* 8 data bits, no parity, 1 stop bit (CR2 reset) */

void uart_putc(char c)
{
    while ((USART_ISR & ISR_TXE) == 0u) {
    }
    USART_TDR = (uint32_t)(unsigned char)c;
}

#include "../cortex_m7/uart_text.h"

/* Polled: the core does nothing else while a frame comes in (about 1400 clocks per byte at
 * 16 MHz and 115200 baud). A line error (overrun, framing, noise, parity) is cleared and the
 * byte kept: the frame's CRC-32 then fails and the host sends the frame again. */
void uart_rx_begin(void)
{
    USART_ICR = ICR_ERRORS;
}

uint8_t uart_getc(void)
{
    for (;;) {
        uint32_t isr = USART_ISR;
        if ((isr & ISR_ERRORS) != 0u) {
            USART_ICR = ICR_ERRORS;
        }
        if ((isr & ISR_RXNE) != 0u) {
            return (uint8_t)USART_RDR;
        }
    }
}

void uart_rx_end(void)
{
}

#endif
