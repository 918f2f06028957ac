"""Load an x86-64 shared library (ELF64) into a flat image the way the dynamic loader would, for
a program with no OS (x86_bochs.py): its PT_LOAD segments at their offsets from one base
address, the bss zeroed, and its relocations applied (RELATIVE: base + addend; GLOB_DAT,
JUMP_SLOT, 64: the symbol's address, from the library itself or from the functions the
program provides). Anything else it would need (another relocation type, a symbol nobody
provides) fails loudly. The structures are the System V ABI's Elf64_Ehdr/Phdr/Shdr/Dyn/Sym/Rela."""
from __future__ import annotations

import struct
from pathlib import Path

PT_LOAD, PT_DYNAMIC, SHT_DYNSYM = 1, 2, 11
DT_NULL, DT_PLTRELSZ, DT_STRTAB, DT_RELA, DT_RELASZ, DT_JMPREL = 0, 2, 5, 7, 8, 23
R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, R_X86_64_RELATIVE = 1, 6, 7, 8
EM_X86_64 = 62
PAGE = 4096
# weak references of the C runtime's start-up files (transactional memory, gprof, atexit) that
# only crt code reads, which a bare-metal program never runs: 0, as for an absent weak symbol
UNUSED_WEAK = {"__gmon_start__", "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__cxa_finalize"}


class SharedObject:
    def __init__(self, path: Path):
        data = path.read_bytes()
        assert data[:6] == b"\x7fELF\x02\x01" and struct.unpack_from("<H", data, 18)[0] == EM_X86_64, \
            f"{path.name}: not a little-endian x86-64 ELF64 file"
        self.name = path.name
        loads, dynamic = self._segments(data)
        self.span = -(-max(vaddr + memsz for _, vaddr, _, memsz in loads) // PAGE) * PAGE
        self.image = bytearray(self.span)  # bss and the gaps between segments stay zero
        for offset, vaddr, filesz, _ in loads:
            self.image[vaddr:vaddr + filesz] = data[offset:offset + filesz]
        tags = self._dynamic(data, *dynamic)
        self.symbols = self._symbols(data, tags[DT_STRTAB])
        self.relocations = [r for table, size in ((DT_RELA, DT_RELASZ), (DT_JMPREL, DT_PLTRELSZ)) if table in tags
                            for r in self._relocations(tags[table], tags[size])]

    @staticmethod
    def _segments(data: bytes) -> tuple[list[tuple[int, int, int, int]], tuple[int, int]]:
        phoff = struct.unpack_from("<Q", data, 0x20)[0]
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        loads, dynamic = [], (0, 0)
        for i in range(phnum):
            kind, _, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
            if kind == PT_LOAD:
                loads.append((offset, vaddr, filesz, memsz))
            elif kind == PT_DYNAMIC:
                dynamic = (offset, filesz)
        assert loads and dynamic[1], "no loadable segment or no dynamic section: not a shared library"
        return loads, dynamic

    @staticmethod
    def _dynamic(data: bytes, offset: int, size: int) -> dict[int, int]:
        tags: dict[int, int] = {}
        for k in range(size // 16):
            tag, value = struct.unpack_from("<qQ", data, offset + 16 * k)
            if tag == DT_NULL:
                break
            tags[tag] = value
        return tags

    def _symbols(self, data: bytes, strtab: int) -> list[tuple[str, bool, int]]:
        """(name, defined here, value) of each dynamic symbol, in table order."""
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
        offset, size = next((s[4], s[5]) for s in sections if s[1] == SHT_DYNSYM)
        out = []
        for k in range(size // 24):
            name_at, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, offset + 24 * k)
            end = self.image.index(b"\0", strtab + name_at)
            out.append((self.image[strtab + name_at:end].decode(), shndx != 0, value))
        return out

    def _relocations(self, vaddr: int, size: int) -> list[tuple[int, int, int, int]]:
        """(offset, type, symbol index, addend) of each Elf64_Rela entry."""
        out = []
        for k in range(size // 24):
            offset, info, addend = struct.unpack_from("<QQq", self.image, vaddr + 24 * k)
            out.append((offset, info & 0xFFFFFFFF, info >> 32, addend))
        return out

    def symbol(self, name: str) -> int:
        """A function or object the library defines: its offset from the base."""
        found = [value for sym, defined, value in self.symbols if sym == name and defined]
        assert found, f"{self.name} defines no symbol {name}"
        return found[0]

    def relocated(self, base: int, provided: dict[str, int]) -> bytes:
        """The image loaded at `base`, its references resolved to itself or to `provided`."""
        image = bytearray(self.image)
        for offset, kind, index, addend in self.relocations:
            if kind == R_X86_64_RELATIVE:
                value = base + addend
            elif kind in (R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT):
                value = self._address(index, base, provided) + (addend if kind == R_X86_64_64 else 0)
            else:
                raise AssertionError(f"{self.name}: relocation type {kind} at {offset:#x} is not handled")
            struct.pack_into("<Q", image, offset, value)
        return bytes(image)

    def _address(self, index: int, base: int, provided: dict[str, int]) -> int:
        name, defined, value = self.symbols[index]
        if defined:
            return base + value
        if name in provided:
            return provided[name]
        assert name in UNUSED_WEAK, f"{self.name} needs {name}, which the bare-metal program does not provide"
        return 0
