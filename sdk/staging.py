"""The output folder of a command: one writer at a time, staged, swapped in whole.

A build writes into DIR.partial and only a build that succeeded replaces DIR, so a failed or
killed command leaves the previous good build (or nothing) and never half of one. Two commands
given the same -o would share DIR.partial; an advisory lock on DIR.lock (flock: the kernel
releases it when its holder exits, however it exits, so the lock of a killed build is free at
once) makes the second refuse at once, naming the first's process, like make or git refuse a
second writer of the same index."""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
from pathlib import Path

from .errors import BusyError, ToolError, UsageError

# What a failed build keeps under the requested output folder (the link map of an image over
# its budget), so it can be inspected; the next successful build replaces the folder.
KEPT_ON_FAILURE = "failed-build"

# Errors of a full or refusing file system: the system's failure, not the SDK's (exit 5, naming
# the folder), whatever the SDK was writing at the time.
STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


def storage_failure(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def storage_error(exc: OSError, folder: Path, kept: str) -> ToolError:
    """One line for a write that the file system refused: which folder, why, what is left."""
    return ToolError(f"cannot write into '{folder}': {os.strerror(exc.errno)}; {kept}")


class FolderLock:
    """An exclusive flock on DIR.lock, taken without waiting. The file holds the holder's pid for
    the message; it is removed on release, and a lock taken on a file that another process has
    just removed is retried on the new one."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder.with_name(folder.name + ".lock")
        self.fd: int | None = None

    def acquire(self) -> None:
        while self.fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self.holder(fd)
                os.close(fd)
                raise BusyError(f"output folder '{self.folder}' is being written by another cuvil-sdk"
                                f"{f' (pid {holder})' if holder else ''}: wait for it to finish or choose another -o")
            if self.same_file(fd):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self.fd = fd
            else:  # its holder removed it between our open and our lock: lock the new one
                os.close(fd)

    def same_file(self, fd: int) -> bool:
        try:
            return os.path.samestat(os.fstat(fd), os.stat(self.path))
        except FileNotFoundError:
            return False

    @staticmethod
    def holder(fd: int) -> str:
        try:
            return os.pread(fd, 32, 0).decode(errors="replace").strip()
        except OSError:
            return ""

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)  # before unlocking: a waiter then sees a removed file and retries
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None


class StagedOutput:
    """Write into DIR.partial and move it to DIR only on success, so a failed command
    leaves neither a half-written folder nor a stale one that looks fresh."""

    def __init__(self, out_dir: Path) -> None:
        self.final = out_dir.resolve()
        self.partial = self.final.with_name(self.final.name + ".partial")
        self.previous = self.final.with_name(self.final.name + ".previous")
        self.lock = FolderLock(self.final)

    def __enter__(self) -> Path:
        if self.final.exists() and not (self.final / "manifest.json").exists() and not self.only_kept_on_failure():
            raise UsageError(f"output folder '{self.final}' exists and was not made by cuvil-sdk; choose another -o")
        # remember which parent folders we create, so a failure can remove them again
        self.created = [p for p in reversed(self.partial.parents) if not p.exists()]
        try:
            self.final.parent.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
            shutil.rmtree(self.partial, ignore_errors=True)  # a killed build's leftovers
            self.partial.mkdir()
        except OSError as exc:
            self.lock.release()
            self.remove_created()
            if storage_failure(exc) or isinstance(exc, PermissionError):
                raise ToolError(f"cannot write into '{self.final.parent}': {os.strerror(exc.errno)}") from None
            raise
        return self.partial

    def only_kept_on_failure(self) -> bool:
        """Empty, or holding only what a failed build of ours kept (KEPT_ON_FAILURE)."""
        return all(p.name == KEPT_ON_FAILURE for p in self.final.iterdir())

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is None:
                self.swap_in()
            else:
                shutil.rmtree(self.partial, ignore_errors=True)
                self.remove_created()
        except OSError as failure:
            shutil.rmtree(self.partial, ignore_errors=True)
            raise ToolError(f"cannot replace '{self.final}': {os.strerror(failure.errno or 0)}") from None
        finally:
            self.lock.release()
        if exc_type is not None and storage_failure(exc):
            kept = "the previous build there is kept" if self.final.exists() else "nothing was written there"
            raise storage_error(exc, self.final, kept) from None
        return False

    def swap_in(self) -> None:
        """The previous build moves aside, the new one takes its name, then the previous one goes:
        at no moment is DIR a mix of the two, and a failure before the second rename puts the
        previous one back."""
        shutil.rmtree(self.previous, ignore_errors=True)
        had_previous = self.final.exists()
        if had_previous:
            self.final.rename(self.previous)
        try:
            self.partial.rename(self.final)
        except OSError:
            if had_previous:
                self.previous.rename(self.final)
            raise
        shutil.rmtree(self.previous, ignore_errors=True)

    def remove_created(self) -> None:
        for parent in reversed(self.created):
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
