/* NUCLEO-L4R5ZI console: LPUART1 on PG7 (TX) / PG8 (RX), which the on-board ST-LINK-V3E bridges
 * to its USB virtual COM port. Polled transmit and receive, 115200 8N1; the API of
 * ../cortex_m7/uart.h, so that the shared start-up code and the demo harness print through it.
 *
 * Registers per the STM32L4+ reference manual (RM0432): PG[15:2] are powered from VDDIO2, which
 * must be declared valid first (PWR_CR2.IOSV, with the PWR clock on); RCC AHB2ENR (GPIOG),
 * APB1ENR1 (PWR), APB1ENR2 (LPUART1), CCIPR.LPUART1SEL = 00 (PCLK1); GPIO MODER/AFRL/AFRH
 * (PG7, PG8: alternate function 8 = LPUART1); LPUART CR1/BRR/ISR/ICR/RDR/TDR. The clock is the
 * reset default, MSI 4 MHz with undivided buses: BRR = 256 x 4 MHz / 115200 = 8889 (the LPUART's
 * divider; it must be at least 0x300).
 *
 * Not tried on hardware: CI builds this file (board_tests/test_nucleo_family.py); no emulator
 * models the STM32L4R5. */
#define RCC_BASE 0x40021000u
#define RCC_AHB2ENR (*(volatile uint32_t *)(RCC_BASE + 0x4Cu))
#define RCC_APB1ENR1 (*(volatile uint32_t *)(RCC_BASE + 0x58u))
#define RCC_APB1ENR2 (*(volatile uint32_t *)(RCC_BASE + 0x5Cu))
#define RCC_CCIPR (*(volatile uint32_t *)(RCC_BASE + 0x88u))
#define RCC_AHB2ENR_GPIOGEN (1u << 6)
#define RCC_APB1ENR1_PWREN (1u << 28)
#define RCC_APB1ENR2_LPUART1EN (1u << 0)
#define RCC_CCIPR_LPUART1SEL_MASK (0x3u << 10)

#define PWR_CR2 (*(volatile uint32_t *)(0x40007000u + 0x04u))
#define PWR_CR2_IOSV (1u << 9)

#define GPIOG_BASE 0x48001800u
#define GPIOG_MODER (*(volatile uint32_t *)(GPIOG_BASE + 0x00u))
#define GPIOG_PUPDR (*(volatile uint32_t *)(GPIOG_BASE + 0x0Cu))
#define GPIOG_AFRL (*(volatile uint32_t *)(GPIOG_BASE + 0x20u))
#define GPIOG_AFRH (*(volatile uint32_t *)(GPIOG_BASE + 0x24u))
#define MODER_AF 0x2u
#define AF8_LPUART1 0x8u
#define PUPD_PULL_UP 0x1u

#define USART_BASE 0x40008000u
#include "../nucleo_f767zi/stm32_usart.h"

#define PCLK1_HZ 4000000u /* MSI after reset */
#define BAUD 115200u

void uart_init(void)
{
    RCC_APB1ENR1 |= RCC_APB1ENR1_PWREN;
    (void)RCC_APB1ENR1; /* the clock is on before the first PWR access */
    PWR_CR2 |= PWR_CR2_IOSV;
    RCC_AHB2ENR |= RCC_AHB2ENR_GPIOGEN;
    RCC_APB1ENR2 |= RCC_APB1ENR2_LPUART1EN;
    RCC_CCIPR &= ~RCC_CCIPR_LPUART1SEL_MASK; /* LPUART1 on PCLK1 */
    (void)RCC_APB1ENR2;
    /* PG7, PG8: alternate function 8; RX pulled up so that an open line idles high. */
    GPIOG_MODER = (GPIOG_MODER & ~((0x3u << 14) | (0x3u << 16))) | (MODER_AF << 14) | (MODER_AF << 16);
    GPIOG_PUPDR = (GPIOG_PUPDR & ~(0x3u << 16)) | (PUPD_PULL_UP << 16);
    GPIOG_AFRL = (GPIOG_AFRL & ~(0xFu << 28)) | (AF8_LPUART1 << 28);
    GPIOG_AFRH = (GPIOG_AFRH & ~0xFu) | AF8_LPUART1;
    USART_CR1 = 0u;
    USART_BRR = (256u * PCLK1_HZ + BAUD / 2u) / BAUD; /* 8889: 0.0 % off */
    USART_CR1 = CR1_ENABLE;
}
