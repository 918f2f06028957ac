"""Serial flashing through the STM32 ROM bootloader's USART protocol (ST AN3155).

- `image`: firmware files (.bin, Intel .hex) and the board's flash geometry.
- `an3155`: the host side of the protocol over pyserial.
- `command`: `flash_command`, what `cuvil-sdk flash` runs.
- `simulator`: the device side, in Python, with fault injection, for tests.
- `bootloader`: build and run the cuvil QEMU bootloader (the device side in firmware,
  targets/cortex_m7/bootloader/) and check images against its integrity header.
"""
from .command import flash_command

__all__ = ["flash_command"]
