/* NUCLEO-F767ZI console: USART3 on PD8 (TX) / PD9 (RX), which the on-board ST-LINK/V2-1
 * bridges to its USB virtual COM port. Polled, transmit only, 115200 8N1; the same API as
 * the QEMU board's CMSDK UART driver (../cortex_m7/uart.h), so that the shared start-up
 * code and the demo harness print through it unchanged.
 *
 * Registers per the STM32F76x/77x reference manual (RM0410) and ST's stm32f767xx.h:
 * RCC AHB1ENR/APB1ENR clock gates, GPIO MODER/AFRH (PD8/PD9 alternate function 7 =
 * USART3), USART CR1/BRR/ISR/TDR. The clock is the reset default: HSI 16 MHz, AHB and
 * APB1 undivided, USART3 kernel clock = PCLK1 (RCC_DCKCFGR2.USART3SEL = 00). */
#include "uart.h"

#define RCC_BASE 0x40023800u
#define RCC_AHB1ENR (*(volatile uint32_t *)(RCC_BASE + 0x30u))
#define RCC_APB1ENR (*(volatile uint32_t *)(RCC_BASE + 0x40u))
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
#define USART_TDR (*(volatile uint32_t *)(USART3_BASE + 0x28u))
#define CR1_UE (1u << 0)
#define CR1_RE (1u << 2)
#define CR1_TE (1u << 3)
#define ISR_TXE (1u << 7)

#define PCLK1_HZ 16000000u /* HSI after reset */
#define BAUD 115200u

void uart_init(void)
{
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
