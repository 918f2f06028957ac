/* The console API of the Cortex-M7 boards (see ../cortex_m7/uart.h); usart3.c implements it here. */
#include "../cortex_m7/uart.h"
