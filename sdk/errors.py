"""Errors the SDK reports to users: one line each, with a distinct exit code per kind."""


class CuvilError(Exception):
    """Base of every error that the CLI turns into one line and an exit code."""

    exit_code = 1


class UsageError(CuvilError):
    """A wrong option or a wrong combination of options."""

    exit_code = 2


class ModelError(CuvilError):
    """The model or a data file is rejected; the message names the node, tensor or file."""

    exit_code = 3


class BudgetError(CuvilError):
    """The model does not fit the board's memory budget."""

    exit_code = 4


class ToolError(CuvilError):
    """A tool that the SDK drives is missing or failed (compiler, scons, QEMU)."""

    exit_code = 5


class TargetError(CuvilError):
    """The built artifact ran but faulted, hung, or exited with an error."""

    exit_code = 6


class FlashError(CuvilError):
    """Flashing over a serial port failed; the message names the step and address."""

    exit_code = 7


class BusyError(CuvilError):
    """The output folder is being written by another cuvil-sdk command; nothing was done."""

    exit_code = 8
