"""A TCP proxy that damages a serial link on purpose: for the serial test harness's tests,
between the host (pyserial's socket://) and a QEMU board's UART0 socket.

`FaultProxy(target_port)` listens on 127.0.0.1 (`.url` for pyserial, `.port` for a labgrid
exporter's NetworkSerialPort) and serves one connection after another (a flash, then the
harness's conversation), each forwarded to 127.0.0.1:target_port. Faults are given per
connection (counted from 0) as byte offsets of that connection's stream:

- `flip_to_board` / `flip_to_host`: offsets whose byte is inverted on the way (a corrupt frame);
- `xor_to_host`: offset -> mask, bits of that byte inverted on the way (one flipped bit);
- `insert_to_host`: offset -> bytes put on the way just before that byte (noise, a forged frame);
- `drop_to_board`: (offset, count) ranges that are swallowed (a lost piece of a frame);
- `garble_to_board_from`: every byte from that offset on is inverted (a link gone bad for good);
- `kill_at`: once the host has sent that many bytes, `on_kill` runs (the test kills the QEMU
  board there) and both sides are closed before the byte that crosses the mark is forwarded.
"""
from __future__ import annotations

import select
import socket
import threading
from dataclasses import dataclass, field
from typing import Callable

from .tcp_proxy import ProxyServer


@dataclass
class Faults:
    flip_to_board: set[int] = field(default_factory=set)
    flip_to_host: set[int] = field(default_factory=set)
    xor_to_host: dict[int, int] = field(default_factory=dict)
    insert_to_host: dict[int, bytes] = field(default_factory=dict)
    drop_to_board: list[tuple[int, int]] = field(default_factory=list)
    garble_to_board_from: int | None = None
    kill_at: int | None = None


class FaultProxy(ProxyServer):
    def __init__(self, target_port: int, faults: dict[int, Faults] | None = None,
                 on_kill: Callable[[], None] | None = None) -> None:
        self.target_port = target_port
        self.faults = faults or {}
        self.on_kill = on_kill
        self.connections = 0
        self.killed = threading.Event()
        super().__init__("fault-proxy")

    def _serve(self) -> None:
        self._server.settimeout(0.05)
        while not self._stop.is_set():
            try:
                host, _ = self._server.accept()
            except socket.timeout:
                continue
            faults = self.faults.get(self.connections, Faults())
            self.connections += 1
            try:
                device = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                host.close()
                continue
            try:
                self._pump(host, device, faults)
            finally:
                for s in (host, device):
                    s.close()

    def _pump(self, host: socket.socket, device: socket.socket, faults: Faults) -> None:
        to_board = to_host = 0
        for s in (host, device):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while not self._stop.is_set():
            readable, _, _ = select.select([host, device], [], [], 0.05)
            for s in readable:
                chunk = s.recv(4096)
                if not chunk:
                    return
                if s is host:
                    if faults.kill_at is not None and to_board + len(chunk) > faults.kill_at:
                        if self.on_kill is not None:
                            self.on_kill()
                        self.killed.set()
                        return
                    out = self._to_board(chunk, to_board, faults)
                    to_board += len(chunk)
                    device.sendall(out)
                else:
                    out = self._to_host(chunk, to_host, faults)
                    to_host += len(chunk)
                    host.sendall(out)

    @staticmethod
    def _to_board(chunk: bytes, at: int, faults: Faults) -> bytes:
        out = bytearray()
        for i, byte in enumerate(chunk):
            offset = at + i
            if any(start <= offset < start + count for start, count in faults.drop_to_board):
                continue
            garbled = faults.garble_to_board_from is not None and offset >= faults.garble_to_board_from
            out.append(byte ^ 0xFF if garbled or offset in faults.flip_to_board else byte)
        return bytes(out)

    @staticmethod
    def _to_host(chunk: bytes, at: int, faults: Faults) -> bytes:
        out = bytearray()
        for i, byte in enumerate(chunk):
            offset = at + i
            out += faults.insert_to_host.get(offset, b"")
            mask = (0xFF if offset in faults.flip_to_host else 0) ^ faults.xor_to_host.get(offset, 0)
            out.append(byte ^ mask)
        return bytes(out)
