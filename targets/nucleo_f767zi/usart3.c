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

#define USART_BASE 0x40004800u
#include "stm32_usart.h"

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
    USART_CR1 = CR1_ENABLE;
}
