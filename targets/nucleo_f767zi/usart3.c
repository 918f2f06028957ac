/* NUCLEO-F767ZI console: USART3 on PD8 (TX) / PD9 (RX), which the on-board ST-LINK/V2-1
 * bridges to its USB virtual COM port. Polled transmit and receive, 115200 8N1; the same API as
 * the QEMU board's CMSDK UART driver (../cortex_m7/uart.h), so that the shared start-up
 * code and the demo harness print through it unchanged.
 *
 * Registers per the STM32F76x/77x reference manual (RM0410) and ST's stm32f767xx.h:
 * RCC AHB1ENR/APB1ENR clock gates, GPIO MODER/AFRH (PD8/PD9 alternate function 7 =
 * USART3), USART CR1/BRR/ISR/ICR/RDR/TDR. The clock is the reset default: HSI 16 MHz, AHB
 * and APB1 undivided, USART3 kernel clock = PCLK1 (RCC_DCKCFGR2.USART3SEL = 00). An image
 * started by the ROM bootloader's GO (not from reset) inherits the bootloader's clock tree,
 * so uart_init() first puts the system clock back on HSI with undivided buses.
 *
 * Not tried on hardware: CI builds this file (board_tests/test_nucleo.py) but no emulator
 * models the STM32F767, so its receive path is the one part of the serial harness that the
 * QEMU tests do not cover. */
#include "uart.h"

#define RCC_BASE 0x40023800u
#define RCC_AHB1ENR (*(volatile uint32_t *)(RCC_BASE + 0x30u))
#define RCC_APB1ENR (*(volatile uint32_t *)(RCC_BASE + 0x40u))
#define RCC_CR (*(volatile uint32_t *)(RCC_BASE + 0x00u))
#define RCC_CFGR (*(volatile uint32_t *)(RCC_BASE + 0x08u))
#define RCC_DCKCFGR2 (*(volatile uint32_t *)(RCC_BASE + 0x90u))
#define RCC_CR_HSION (1u << 0)
#define RCC_CR_HSIRDY (1u << 1)
#define RCC_CFGR_SWS_MASK (0x3u << 2)
#define RCC_DCKCFGR2_USART3SEL_MASK (0x3u << 4)
#define RCC_AHB1ENR_GPIODEN (1u << 3)
#define RCC_APB1ENR_USART3EN (1u << 18)

#define GPIOD_BASE 0x40020C00u
#define GPIOD_MODER (*(volatile uint32_t *)(GPIOD_BASE + 0x00u))
#define GPIOD_OSPEEDR (*(volatile uint32_t *)(GPIOD_BASE + 0x08u))
#define GPIOD_PUPDR (*(volatile uint32_t *)(GPIOD_BASE + 0x0Cu))
#define GPIOD_AFRH (*(volatile uint32_t *)(GPIOD_BASE + 0x24u))
#define MODER_AF 0x2u
#define AF7_USART3 0x7u
#define PUPD_PULL_UP 0x1u
#define OSPEED_MEDIUM 0x1u

#define USART3_BASE 0x40004800u
#define USART_CR1 (*(volatile uint32_t *)(USART3_BASE + 0x00u))
#define USART_BRR (*(volatile uint32_t *)(USART3_BASE + 0x0Cu))
#define USART_ISR (*(volatile uint32_t *)(USART3_BASE + 0x1Cu))
#define USART_ICR (*(volatile uint32_t *)(USART3_BASE + 0x20u))
#define USART_RDR (*(volatile uint32_t *)(USART3_BASE + 0x24u))
#define USART_TDR (*(volatile uint32_t *)(USART3_BASE + 0x28u))
#define ISR_ERRORS 0xFu /* PE, FE, NF, ORE */
#define ISR_RXNE (1u << 5)
#define ICR_ERRORS 0xFu /* PECF, FECF, NCF, ORECF */
#define CR1_UE (1u << 0)
#define CR1_RE (1u << 2)
#define CR1_TE (1u << 3)
#define ISR_TXE (1u << 7)

#define PCLK1_HZ 16000000u /* HSI after reset */
#define BAUD 115200u

/* System clock back to HSI 16 MHz with AHB and APB1 undivided, as after reset. */
static void clock_to_hsi(void)
{
    RCC_CR |= RCC_CR_HSION;
    while ((RCC_CR & RCC_CR_HSIRDY) == 0u) {
    }
    RCC_CFGR = 0u; /* SW = HSI, no prescalers, no MCO */
    while ((RCC_CFGR & RCC_CFGR_SWS_MASK) != 0u) {
    }
    RCC_DCKCFGR2 &= ~RCC_DCKCFGR2_USART3SEL_MASK; /* USART3 on PCLK1 */
}

void uart_init(void)
{
    clock_to_hsi();
    RCC_AHB1ENR |= RCC_AHB1ENR_GPIODEN;
    RCC_APB1ENR |= RCC_APB1ENR_USART3EN;
    (void)RCC_APB1ENR; /* read back: the clock is on before the first register access */
    /* PD8, PD9: alternate function 7; RX pulled up so that an open line idles high. */
    GPIOD_MODER = (GPIOD_MODER & ~((0x3u << 16) | (0x3u << 18))) | (MODER_AF << 16) | (MODER_AF << 18);
    GPIOD_OSPEEDR = (GPIOD_OSPEEDR & ~(0x3u << 16)) | (OSPEED_MEDIUM << 16);
    GPIOD_PUPDR = (GPIOD_PUPDR & ~(0x3u << 18)) | (PUPD_PULL_UP << 18);
    GPIOD_AFRH = (GPIOD_AFRH & ~0xFFu) | (AF7_USART3 << 0) | (AF7_USART3 << 4);
    USART_CR1 = 0u;
    /* Oversampling by 16: BRR = f_ck / baud, rounded (16 MHz / 115200 = 138.9 -> 139, 0.08 % off). */
    USART_BRR = (PCLK1_HZ + BAUD / 2u) / BAUD;
    USART_CR1 = CR1_TE | CR1_RE | CR1_UE; /* 8 data bits, no parity, 1 stop bit (CR2 reset) */
}

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
