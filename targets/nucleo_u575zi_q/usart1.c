/* NUCLEO-U575ZI-Q console: USART1 on PA9 (TX) / PA10 (RX), which the on-board ST-LINK-V3E bridges
 * to its USB virtual COM port. Polled transmit and receive, 115200 8N1; the API of
 * ../cortex_m7/uart.h, so that the shared start-up code and the demo harness print through it.
 *
 * Registers per the STM32U5 reference manual (RM0456), at their non-secure addresses (TrustZone
 * disabled, the factory option bytes): RCC AHB2ENR1 (GPIOA), APB2ENR (USART1), CCIPR1.USART1SEL =
 * 00 (PCLK2); GPIO MODER/AFRH (PA9, PA10: alternate function 7 = USART1); USART CR1/BRR/ISR/ICR/
 * RDR/TDR (no FIFO, no prescaler after reset). The clock is the reset default, MSIS 4 MHz with
 * undivided buses: BRR = 4 MHz / 115200 = 35 (0.8 % off, within 8N1's tolerance).
 *
 * Not tried on hardware: CI builds this file (board_tests/test_nucleo_family.py); no emulator
 * models the STM32U575. */
#define RCC_BASE 0x46020C00u
#define RCC_AHB2ENR1 (*(volatile uint32_t *)(RCC_BASE + 0x8Cu))
#define RCC_APB2ENR (*(volatile uint32_t *)(RCC_BASE + 0xA4u))
#define RCC_CCIPR1 (*(volatile uint32_t *)(RCC_BASE + 0xE0u))
#define RCC_AHB2ENR1_GPIOAEN (1u << 0)
#define RCC_APB2ENR_USART1EN (1u << 14)
#define RCC_CCIPR1_USART1SEL_MASK 0x3u

#define GPIOA_BASE 0x42020000u
#define GPIOA_MODER (*(volatile uint32_t *)(GPIOA_BASE + 0x00u))
#define GPIOA_PUPDR (*(volatile uint32_t *)(GPIOA_BASE + 0x0Cu))
#define GPIOA_AFRH (*(volatile uint32_t *)(GPIOA_BASE + 0x24u))
#define MODER_AF 0x2u
#define AF7_USART1 0x7u
#define PUPD_PULL_UP 0x1u

#define USART_BASE 0x40013800u
#include "../nucleo_f767zi/stm32_usart.h"

#define PCLK2_HZ 4000000u /* MSIS after reset */
#define BAUD 115200u

void uart_init(void)
{
    RCC_AHB2ENR1 |= RCC_AHB2ENR1_GPIOAEN;
    RCC_APB2ENR |= RCC_APB2ENR_USART1EN;
    RCC_CCIPR1 &= ~RCC_CCIPR1_USART1SEL_MASK; /* USART1 on PCLK2 */
    (void)RCC_APB2ENR; /* the clock is on before the first register access */
    /* PA9, PA10: alternate function 7; RX pulled up so that an open line idles high. */
    GPIOA_MODER = (GPIOA_MODER & ~((0x3u << 18) | (0x3u << 20))) | (MODER_AF << 18) | (MODER_AF << 20);
    GPIOA_PUPDR = (GPIOA_PUPDR & ~(0x3u << 20)) | (PUPD_PULL_UP << 20);
    GPIOA_AFRH = (GPIOA_AFRH & ~0xFF0u) | (AF7_USART1 << 4) | (AF7_USART1 << 8);
    USART_CR1 = 0u;
    USART_BRR = (PCLK2_HZ + BAUD / 2u) / BAUD; /* oversampling by 16 */
    USART_CR1 = CR1_ENABLE;
}
