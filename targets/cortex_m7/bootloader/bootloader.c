/* The cuvil-sdk QEMU bootloader: the device side of ST AN3155 (the STM32 ROM bootloader's
 * USART protocol) on the CMSDK UART0 of qemu-system-arm -M mps2-an500, so that
 * `cuvil-sdk flash` can be proven end to end on an emulated board.
 *
 * It lives at the start of code memory (BL_FLASH_START, below BL_APP_START) and treats
 * [BL_APP_START, BL_FLASH_END) as flash cut into BL_SECTOR_SIZE sectors: an erased byte
 * reads 0xFF and programming can only clear bits (a WRITE MEMORY that would need a 0 to
 * become 1 is NACKed and stores nothing). On mps2-an500 that memory is RAM, so "flash"
 * here is a model of flash, kept in the real address space the application runs from.
 *
 * Commands: GET, GET VERSION, GET ID (BL_DEVICE_ID), READ MEMORY, WRITE MEMORY, EXTENDED
 * ERASE (pages, or 0xFFFF = every application sector; a page count beyond the chip's is
 * NACKed at once) and GO. Everything below BL_APP_START (the bootloader itself) is
 * read-only: erasing or writing it is NACKed.
 *
 * GO starts an image only if its integrity header checks out (image_header.py beside this
 * file writes it at build time): vector table words 7-9, which the Cortex-M core reserves,
 * hold the magic "CUVL", the image length and the CRC-32 (IEEE, as zlib) of the image with
 * those 12 bytes taken as zero. A half-written or corrupt image draws NACK and the
 * bootloader keeps serving. After a reset it always waits for 0x7F (like an STM32 with
 * BOOT0 high); it starts an application only on GO.
 *
 * Start-up, fault reports and the UART transmitter are the board's own (../startup.c,
 * ../uart.c, ../semihost.c); so is the receiver (uart_rx_begin/uart_getc), which sleeps in
 * WFI between bytes (its interrupt wakes the core but is never taken). */
#include <stdint.h>

#include "semihost.h"
#include "uart.h"

#if !defined(BL_UART_BASE) || !defined(BL_FLASH_START) || !defined(BL_APP_START) || !defined(BL_FLASH_END) || \
    !defined(BL_SECTOR_SIZE) || !defined(BL_DEVICE_ID) || !defined(BL_RAM_START) || !defined(BL_RAM_END) ||     \
    !defined(BL_UART_RX_IRQ)
#error "build with sdk/flash/bootloader.py: it passes the board's [flash] data as -D options"
#endif

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define MPU_CTRL (*(volatile uint32_t *)0xE000ED94u)
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)

#define ACK 0x79u
#define NACK 0x1Fu
#define INIT 0x7Fu
#define CMD_GET 0x00u
#define CMD_GET_VERSION 0x01u
#define CMD_GET_ID 0x02u
#define CMD_READ_MEMORY 0x11u
#define CMD_GO 0x21u
#define CMD_WRITE_MEMORY 0x31u
#define CMD_EXTENDED_ERASE 0x44u
#define VERSION 0x10u /* protocol version 1.0 of this bootloader */

#define SECTORS ((BL_FLASH_END - BL_FLASH_START) / BL_SECTOR_SIZE)
#define FIRST_APP_SECTOR ((BL_APP_START - BL_FLASH_START) / BL_SECTOR_SIZE)

/* The integrity header, in the application's vector table (byte offsets). */
#define HEADER_MAGIC 0x4C565543u /* "CUVL" */
#define HEADER_AT 28u           /* words 7, 8, 9: magic, length, CRC-32 */
#define HEADER_END 40u
#define VECTOR_ALIGN 256u /* VTOR needs the table aligned to its size, 48 words rounded up */

/* The layout as objects, not macros, so that a region starting at 0 draws no
 * "comparison is always true" warning. */
static const uint32_t flash_start = BL_FLASH_START;
static const uint32_t flash_end = BL_FLASH_END;
static const uint32_t app_start = BL_APP_START;
static const uint32_t first_app_sector = FIRST_APP_SECTOR;

static const uint8_t commands[] = {CMD_GET, CMD_GET_VERSION, CMD_GET_ID, CMD_READ_MEMORY, CMD_GO,
                                   CMD_WRITE_MEMORY, CMD_EXTENDED_ERASE};

/* A byte from the host: uart.c's receiver sleeps in WFI between bytes (its interrupt wakes the
 * core but is never taken: PRIMASK stays set, from uart_rx_begin() in main() on). */
static uint8_t rx(void)
{
    return uart_getc();
}

static void tx(uint8_t byte)
{
    uart_putc((char)byte);
}

/* Memory of the flash model: through volatile pointers made from run-time integers, so
 * that address 0 (where the bootloader lives) is an address like any other. */
static uint8_t peek(uint32_t address)
{
    return *(volatile const uint8_t *)(uintptr_t)address;
}

static uint32_t peek32(uint32_t address)
{
    return *(volatile const uint32_t *)(uintptr_t)address;
}

static void poke(uint32_t address, uint8_t value)
{
    *(volatile uint8_t *)(uintptr_t)address = value;
}

static int in_flash(uint32_t address, uint32_t size)
{
    return address >= flash_start && address < flash_end && size <= flash_end - address;
}

/* Four address bytes, most significant first, and their XOR; 0 if the checksum is wrong
 * or the address is outside flash (the caller NACKs). */
static int rx_address(uint32_t *address)
{
    uint32_t value = 0u;
    uint8_t sum = 0u;
    for (int i = 0; i < 4; i++) {
        uint8_t byte = rx();
        sum ^= byte;
        value = (value << 8) | byte;
    }
    *address = value;
    return rx() == sum && in_flash(value, 1u);
}

static void cmd_get(void)
{
    tx(ACK);
    tx((uint8_t)sizeof commands); /* bytes that follow, minus one: the version + the commands */
    tx(VERSION);
    for (uint32_t i = 0u; i < sizeof commands; i++) {
        tx(commands[i]);
    }
    tx(ACK);
}

static void cmd_get_version(void)
{
    tx(ACK);
    tx(VERSION);
    tx(0u); /* option bytes 1 and 2: none */
    tx(0u);
    tx(ACK);
}

static void cmd_get_id(void)
{
    tx(ACK);
    tx(1u); /* two bytes follow */
    tx((uint8_t)((BL_DEVICE_ID >> 8) & 0xFFu));
    tx((uint8_t)(BL_DEVICE_ID & 0xFFu));
    tx(ACK);
}

static void cmd_read_memory(void)
{
    uint32_t address;
    tx(ACK);
    if (!rx_address(&address)) {
        tx(NACK);
        return;
    }
    tx(ACK);
    uint8_t count = rx();
    uint8_t complement = rx();
    if (count + complement != 0xFF /* complement */ || !in_flash(address, (uint32_t)count + 1u)) {
        tx(NACK);
        return;
    }
    tx(ACK);
    for (uint32_t i = 0u; i <= count; i++) {
        tx(peek(address + i));
    }
}

static void cmd_write_memory(void)
{
    static uint8_t data[256];
    uint32_t address;
    tx(ACK);
    if (!rx_address(&address)) {
        tx(NACK);
        return;
    }
    tx(ACK);
    uint8_t count = rx();
    uint8_t sum = count;
    uint32_t size = (uint32_t)count + 1u;
    for (uint32_t i = 0u; i < size; i++) {
        data[i] = rx();
        sum ^= data[i];
    }
    if (rx() != sum) {
        tx(NACK);
        return;
    }
    /* Whole words, inside the application region, onto erased (or compatible) bits only. */
    if (address % 4u != 0u || size % 4u != 0u || address < app_start || !in_flash(address, size)) {
        tx(NACK);
        return;
    }
    for (uint32_t i = 0u; i < size; i++) {
        if ((peek(address + i) & data[i]) != data[i]) {
            tx(NACK);
            return;
        }
    }
    for (uint32_t i = 0u; i < size; i++) {
        poke(address + i, data[i]);
    }
    tx(ACK);
}

static void erase_sector(uint32_t sector)
{
    uint32_t base = flash_start + sector * BL_SECTOR_SIZE;
    for (uint32_t i = 0u; i < BL_SECTOR_SIZE; i += 4u) {
        *(volatile uint32_t *)(uintptr_t)(base + i) = 0xFFFFFFFFu;
    }
}

static void cmd_extended_erase(void)
{
    static uint16_t pages[SECTORS];
    tx(ACK);
    uint8_t hi = rx();
    uint8_t lo = rx();
    uint32_t count = ((uint32_t)hi << 8) | lo;
    if (count >= 0xFFF0u) { /* special erases: 0xFFFF all (here: every application sector) */
        if (rx() != (uint8_t)(hi ^ lo) || count != 0xFFFFu) {
            tx(NACK); /* 0xFFFE / 0xFFFD are bank erases: there is one bank */
            return;
        }
        for (uint32_t s = first_app_sector; s < SECTORS; s++) {
            erase_sector(s);
        }
        tx(ACK);
        return;
    }
    /* More pages than the chip has: NACK at once rather than wait for up to 128 KiB of page
     * numbers. This is also what lets a host resynchronise with bursts of 0x7F after the
     * link was cut right after the command (0x7F7F pages). */
    if (count >= SECTORS) {
        tx(NACK);
        return;
    }
    /* Every page number is read, so that a refused command still ends on its checksum. */
    uint8_t sum = hi ^ lo;
    int ok = 1;
    for (uint32_t i = 0u; i <= count; i++) {
        uint8_t page_hi = rx();
        uint8_t page_lo = rx();
        sum ^= page_hi ^ page_lo;
        uint32_t page = ((uint32_t)page_hi << 8) | page_lo;
        if (page < first_app_sector || page >= SECTORS) {
            ok = 0; /* the bootloader's own sectors, or none at all */
        } else if (ok) {
            pages[i] = (uint16_t)page;
        }
    }
    if (rx() != sum || !ok) {
        tx(NACK);
        return;
    }
    for (uint32_t i = 0u; i <= count; i++) {
        erase_sector(pages[i]);
    }
    tx(ACK);
}

/* CRC-32 as zlib computes it (reflected 0xEDB88320, initial and final inversion), a byte
 * at a time from a table built on first use: a 2 MiB image is checked well within the
 * host's wait for GO's ACK. */
static uint32_t crc_table[256];

static uint32_t crc32_byte(uint32_t crc, uint8_t byte)
{
    if (crc_table[1] == 0u) {
        for (uint32_t n = 0u; n < 256u; n++) {
            uint32_t c = n;
            for (int bit = 0; bit < 8; bit++) {
                c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
            }
            crc_table[n] = c;
        }
    }
    return (crc >> 8) ^ crc_table[(crc ^ byte) & 0xFFu];
}

/* Whether the image at `address` may be started: header, length, CRC, stack and entry. */
static int image_ok(uint32_t address)
{
    if (address < app_start || address % VECTOR_ALIGN != 0u || !in_flash(address, HEADER_END)) {
        return 0;
    }
    uint32_t length = peek32(address + HEADER_AT + 4u);
    if (peek32(address + HEADER_AT) != HEADER_MAGIC || length < HEADER_END || !in_flash(address, length)) {
        return 0;
    }
    uint32_t crc = 0xFFFFFFFFu;
    for (uint32_t i = 0u; i < length; i++) {
        crc = crc32_byte(crc, (i >= HEADER_AT && i < HEADER_END) ? 0u : peek(address + i));
    }
    if ((crc ^ 0xFFFFFFFFu) != peek32(address + HEADER_AT + 8u)) {
        return 0;
    }
    uint32_t sp = peek32(address);
    uint32_t pc = peek32(address + 4u);
    return sp % 8u == 0u && sp > BL_RAM_START && sp <= BL_RAM_END && (pc & 1u) != 0u && pc - 1u >= address &&
           pc - 1u < address + length;
}

/* Hand the core over as the application expects it after a reset: no MPU, no SysTick,
 * UART0's receiver and its interrupt off, the vector table at the image, its stack, its entry. */
static void start_application(uint32_t address) __attribute__((noreturn));
static void start_application(uint32_t address)
{
    uart_reset(); /* the ACK leaves first; receiver and its interrupt off */
    SYST_CSR = 0u;
    MPU_CTRL = 0u;
    __asm__ volatile("dsb\n\tisb\n\tcpsie i" ::: "memory"); /* PRIMASK clear, as after a reset */
    SCB_VTOR = address;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    uint32_t sp = peek32(address);
    uint32_t pc = peek32(address + 4u);
    __asm__ volatile("msr msp, %0\n\t"
                     "bx %1" ::"r"(sp),
                     "r"(pc)
                     : "memory");
    __builtin_unreachable();
}

static void cmd_go(void)
{
    uint32_t address;
    tx(ACK);
    if (!rx_address(&address) || !image_ok(address)) {
        tx(NACK);
        return;
    }
    tx(ACK);
    start_application(address);
}

/* One line on the emulator's standard output (semihosting) once the receiver is on: whoever
 * started the emulated board waits for it instead of guessing how long start-up takes
 * (board file: [flash] bootloader_ready). This firmware only ever runs under QEMU. */
static void announce_ready(void)
{
    static const char ready[] = "cuvil-bootloader: ready\n";
    int out = sh_open(":tt", 4); /* ":tt" opened for writing is the host's stdout */
    if (out >= 0) (void)sh_write(out, ready, sizeof ready - 1);
}

int main(void)
{
    uart_rx_begin(); /* interrupts wake WFI but are never taken; uart_init() set the baud rate */
    announce_ready();
    while (rx() != INIT) { /* before the session only 0x7F counts (autobaud on a real chip) */
    }
    tx(ACK);
    for (;;) {
        uint8_t code = rx();
        uint8_t complement = rx();
        if (code + complement != 0xFF) {
            tx(NACK);
            continue;
        }
        switch (code) {
        case CMD_GET:
            cmd_get();
            break;
        case CMD_GET_VERSION:
            cmd_get_version();
            break;
        case CMD_GET_ID:
            cmd_get_id();
            break;
        case CMD_READ_MEMORY:
            cmd_read_memory();
            break;
        case CMD_WRITE_MEMORY:
            cmd_write_memory();
            break;
        case CMD_EXTENDED_ERASE:
            cmd_extended_erase();
            break;
        case CMD_GO:
            cmd_go();
            break;
        default:
            tx(NACK);
            break;
        }
    }
}
