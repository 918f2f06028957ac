"""Boards in a labgrid farm (docs/farm.md): `--place NAME` acquires the place through the
labgrid coordinator, runs the serial test harness on the board behind it (its
NetworkSerialPort; its NetworkPowerPort, where it has one, is cycled before flashing) and
releases it, also on error. Several places share the samples: `validate --place a --place b`
sends each place a contiguous shard, all places at once, and merges the results in sample
order.

labgrid is an optional dependency (`pip install 'cuvil-sdk[farm]'`), imported only here and
only when a place is used; without it the command fails with one line (exit 5).
"""
from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..boards import Board
from ..errors import CuvilError, TargetError, ToolError, UsageError
from .serial_harness import Conversation, SerialTarget, result_of, run_target, sample_payloads

DEFAULT_COORDINATOR = "127.0.0.1:20408"  # labgrid's own default
CONNECT_TIMEOUT_S = 20.0
SERIAL_CLASSES = ("NetworkSerialPort",)
POWER_CLASSES = ("NetworkPowerPort",)


def require_labgrid() -> Any:
    try:
        from labgrid.remote import client
    except ImportError:
        raise ToolError("--place needs labgrid: pip install 'cuvil-sdk[farm]' (or pip install labgrid)") from None
    return client


def coordinator_address(explicit: str | None) -> str:
    return explicit or os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR


class Coordinator:
    """A client session with the labgrid coordinator, on an event loop of its own."""

    def __init__(self, address: str) -> None:
        client = require_labgrid()
        from labgrid.remote.generated import labgrid_coordinator_pb2
        self.pb2 = labgrid_coordinator_pb2
        self.address = address
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)  # grpc's channel binds to the current loop when it is made
        self.session = client.ClientSession(address, self.loop)
        self._wait(self.session.start(), f"cannot reach the labgrid coordinator at {address}")

    def _wait(self, coroutine, failure: str) -> Any:
        try:
            return self.loop.run_until_complete(asyncio.wait_for(coroutine, CONNECT_TIMEOUT_S))
        except asyncio.TimeoutError:
            raise TargetError(f"{failure}: no answer within {CONNECT_TIMEOUT_S:g} s") from None
        except CuvilError:
            raise
        except Exception as exc:  # grpc and labgrid errors: one line
            detail = getattr(exc, "details", None)
            text = detail() if callable(detail) else str(exc)
            raise TargetError(f"{failure}: {text or type(exc).__name__}") from None

    def place(self, name: str) -> Any:
        if name not in self.session.places:
            known = ", ".join(sorted(self.session.places)) or "none"
            raise UsageError(f"--place {name}: the labgrid coordinator at {self.address} has no such place "
                             f"(places: {known})")
        return self.session.places[name]

    def acquire(self, name: str) -> None:
        place = self.place(name)
        if place.acquired:
            raise TargetError(f"place '{name}' is already acquired by {place.acquired}")
        self._wait(self.session.stub.AcquirePlace(self.pb2.AcquirePlaceRequest(placename=name)),
                   f"cannot acquire place '{name}'")
        self._wait(self.session.sync_with_coordinator(), "lost the labgrid coordinator")

    def release(self, name: str) -> None:
        self._wait(self.session.stub.ReleasePlace(self.pb2.ReleasePlaceRequest(placename=name)),
                   f"cannot release place '{name}'")
        self._wait(self.session.sync_with_coordinator(), "lost the labgrid coordinator")

    def resources(self, name: str) -> dict[str, Any]:
        """{class name: resource entry} of the acquired place."""
        try:
            entries = self.session.get_target_resources(self.place(name))
        except Exception as exc:
            raise TargetError(f"place '{name}': {exc}") from None
        return {cls: entry for (_, cls), entry in entries.items()}

    def close(self) -> None:
        try:
            self._wait(self.session.stop(), "stopping")
            self._wait(self.session.close(), "closing")
        except CuvilError:
            pass
        finally:
            self.loop.close()
            asyncio.set_event_loop(None)


def serial_url(place: str, resources: dict[str, Any]) -> str:
    for cls in SERIAL_CLASSES:
        if cls in resources:
            args = resources[cls].args
            scheme = "rfc2217" if args.get("protocol", "rfc2217") == "rfc2217" else "socket"
            return f"{scheme}://{args['host']}:{args['port']}"
    raise TargetError(f"place '{place}' has no serial port (a {' or '.join(SERIAL_CLASSES)} resource)")


def power_cycle(place: str, resources: dict[str, Any]) -> None:
    """Cycle the place's power through labgrid's own driver, where the place has a power port."""
    cls = next((c for c in POWER_CLASSES if c in resources), None)
    if cls is None:
        return
    from labgrid import Target
    from labgrid.driver import NetworkPowerDriver
    from labgrid.factory import target_factory
    target = Target(place)
    target_factory.make_resource(target, cls, "power", resources[cls].args)
    driver = NetworkPowerDriver(target, "power")
    target.activate(driver)
    try:
        driver.cycle()
    except Exception as exc:
        raise TargetError(f"place '{place}': power cycle failed: {exc}") from None


def release_all(coordinator: Coordinator, names: list[str]) -> None:
    """Release every acquired place, even when one release fails (said on stderr), then close."""
    import sys
    try:
        for name in reversed(names):
            try:
                coordinator.release(name)
            except CuvilError as exc:
                print(f"cuvil-sdk: warning: {exc}", file=sys.stderr)
    finally:
        coordinator.close()


@dataclass
class Shard:
    place: str
    first: int
    payloads: list[bytes]
    conversation: Conversation = field(default_factory=lambda: Conversation([], [], []))
    error: CuvilError | None = None


def shards(places: list[str], payloads: list[bytes]) -> list[Shard]:
    """Contiguous shards, one per place, sizes differing by at most one."""
    bounds = np.linspace(0, len(payloads), len(places) + 1).round().astype(int)
    return [Shard(p, int(a), payloads[a:b]) for p, a, b in zip(places, bounds[:-1], bounds[1:])]


@dataclass(frozen=True)
class FarmTarget:
    """`--place` (repeatable) and the coordinator's address (`--coordinator`, LG_COORDINATOR)."""
    places: tuple[str, ...]
    coordinator: str | None = None
    baud: int = 115200

    def run(self, board: Board, info: dict, samples: list[dict[str, np.ndarray]], progress: bool) -> dict:
        if len(set(self.places)) != len(self.places):
            raise UsageError(f"--place names a place twice: {', '.join(self.places)}")
        work = shards(list(self.places), sample_payloads(info, samples))
        coordinator = Coordinator(coordinator_address(self.coordinator))
        acquired: list[str] = []
        try:
            targets = {}
            for shard in work:
                coordinator.acquire(shard.place)
                acquired.append(shard.place)
                resources = coordinator.resources(shard.place)
                power_cycle(shard.place, resources)
                targets[shard.place] = SerialTarget(serial_url(shard.place, resources), baud=self.baud,
                                                    label=f"place '{shard.place}'")
            run_shards(board, info, work, targets, progress)
        finally:
            release_all(coordinator, acquired)
        failed = [s.error for s in work if s.error is not None]
        if failed:
            raise failed[0]
        result = result_of(board, info, [s.conversation for s in work])
        result["places"] = [place_entry(s) for s in work]
        return result


def place_entry(shard: Shard) -> dict:
    """Which samples a place ran; `count_check` where its counts were calibrated (SysTick):
    "ok", or why they are not guest instructions."""
    entry = {"place": shard.place, "first_sample": shard.first, "samples": len(shard.payloads)}
    if shard.conversation.calibrated:
        entry["count_check"] = shard.conversation.count_problem or "ok"
    return entry


def run_shards(board: Board, info: dict, work: list[Shard], targets: dict[str, SerialTarget],
               progress: bool) -> None:
    """Every shard on its place at once (a thread each: the work is serial I/O); a shard's
    error is kept on it, so every other place still finishes and is released."""
    def one(shard: Shard) -> None:
        try:
            shard.conversation = run_target(board, info, shard.payloads, targets[shard.place],
                                            progress and len(work) == 1, shard.first)
        except CuvilError as exc:  # the harness's errors name the place already, flashing's do not
            named = str(exc) if str(exc).startswith(f"place '{shard.place}'") else f"place '{shard.place}': {exc}"
            shard.error = type(exc)(named)
    threads = [threading.Thread(target=one, args=(s,), name=f"place-{s.place}") for s in work if s.payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
