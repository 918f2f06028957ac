"""A TCP proxy that cuts the link: for flashing tests against a bootloader behind a socket.

`CutProxy(target_port, cut_after=k)` listens on 127.0.0.1 (`.url` is the pyserial URL to
give the host) and forwards the first connection to 127.0.0.1:target_port. Once it has
forwarded k bytes from the host to the device it closes both connections, as a pulled
cable would: the host sees its socket die in the middle of whatever it was doing, and
the device side sees its client go away (QEMU's socket chardev then waits for the next).
Bytes from the device to the host are forwarded untouched until the cut.
"""
from __future__ import annotations

import select
import socket
import threading


class ProxyServer:
    """A listening socket on 127.0.0.1 and the thread that serves it (`_serve`, in a subclass);
    a context manager: the thread starts on entry and is stopped and joined on exit."""

    def __init__(self, name: str) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._server.close()

    def _serve(self) -> None:
        raise NotImplementedError


class CutProxy(ProxyServer):
    def __init__(self, target_port: int, cut_after: int, timeout_s: float = 60.0) -> None:
        self.target_port = target_port
        self.cut_after = cut_after
        self.timeout_s = timeout_s
        self.forwarded = 0            # host-to-device bytes passed on
        self.cut = threading.Event()  # set once the link was cut
        super().__init__("cut-proxy")

    def _serve(self) -> None:
        self._server.settimeout(0.05)
        host = None
        while host is None and not self._stop.is_set():
            try:
                host, _ = self._server.accept()
            except socket.timeout:
                continue
        if host is None:
            return
        device = socket.create_connection(("127.0.0.1", self.target_port), timeout=self.timeout_s)
        for s in (host, device):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
        try:
            self._pump(host, device)
        finally:
            for s in (host, device):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def _pump(self, host: socket.socket, device: socket.socket) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([host, device], [], [], 0.05)
            for src in ready:
                try:
                    data = src.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    return  # one side hung up: end both
                if src is device:
                    host.setblocking(True)
                    host.sendall(data)
                    host.setblocking(False)
                    continue
                room = self.cut_after - self.forwarded
                device.setblocking(True)
                device.sendall(data[:max(room, 0)])
                device.setblocking(False)
                self.forwarded += min(len(data), max(room, 0))
                if len(data) >= room:
                    self.cut.set()
                    return
