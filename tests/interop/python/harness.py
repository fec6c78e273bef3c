#!/usr/bin/env python3
"""The SDK-independent harness of the Python interop client drivers.

client_checks.py (mcp 2.3) and legacy_client.py (mcp 1.30) import this
module; it imports nothing from `mcp` (only the stdlib and anyio), so it works
in both venvs. It holds what the drivers share: the fixture names, the check
verdicts (`expect`, `CheckFailed`, `Skip`) and their JSON lines (`emit`,
`run_one`), the connection runner (`run_checks`), the SDK-independent
`shutdown` check, and the command line (`main`: `[--wire FILE] <server
command...>`).

Run as a script it is the `--wrap` wrapper the drivers start the server under:

    harness.py --wrap STATUS WIRE -- cmd...

a transparent parent that records the server's exit status in STATUS (so the
`shutdown` check can tell a clean exit on stdin EOF from the SDK's SIGTERM
escalation; neither SDK's stdio transport exposes the process) and, unless
WIRE is `-`, every line on the wire with timestamps in WIRE.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time

import anyio

CHECK_TIMEOUT = 10.0
FIXTURE_TOOLS = ["echo", "add", "test_image_content", "fail", "slow", "progress", "bump", "toggle_tool", "ask"]
TEMPLATE = "test://template/{id}/data"

WRAPPER = os.path.abspath(__file__)
DRIVER = os.path.splitext(os.path.basename(sys.argv[0]))[0]  # tags diagnostics: client_checks, legacy_client

# ---------------------------------------------------------------------------
# --wrap mode.
# ---------------------------------------------------------------------------


def wrap_main(argv: list[str]) -> int:
    """`--wrap STATUS WIRE -- cmd...`: run cmd, optionally tee its stdio, record its exit status."""
    status_path, wire_path = argv[0], argv[1]
    cmd = argv[3:]
    started = time.monotonic()
    try:
        if wire_path == "-":
            child = subprocess.Popen(cmd)  # stdin, stdout, stderr inherited: fully transparent
        else:
            child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as e:
        print(f"cannot start the server {cmd!r}: {e}", file=sys.stderr)
        return 127
    if wire_path != "-":
        wire = open(wire_path, "a", encoding="utf-8")
        lock = threading.Lock()

        def log(direction: str, line: bytes) -> None:
            with lock:
                wire.write(f"{time.monotonic() - started:9.3f} {direction} {line.decode('utf-8', 'replace').rstrip()}\n")
                wire.flush()

        def pump(src, dst, direction: str, close_dst: bool) -> None:
            for line in iter(src.readline, b""):
                log(direction, line)
                dst.write(line)
                dst.flush()
            log(direction, b"<EOF>")
            if close_dst:
                dst.close()

        stdin = os.fdopen(0, "rb", buffering=0)
        stdout = os.fdopen(1, "wb", buffering=0)
        threading.Thread(target=pump, args=(stdin, child.stdin, "->", True), daemon=True).start()
        out = threading.Thread(target=pump, args=(child.stdout, stdout, "<-", False), daemon=True)
        out.start()
    rc = child.wait()
    if wire_path != "-":
        out.join(1.0)
    with open(status_path, "w", encoding="utf-8") as f:
        # CLOCK_MONOTONIC is system-wide, so the client can compare `exited_at` with its own clock.
        json.dump({"returncode": rc, "exited_at": time.monotonic()}, f)
    return 0 if rc == 0 else 1


def wrapped(server_cmd: list[str], status_path: str, wire: str | None) -> tuple[str, list[str]]:
    """The command and arguments that run `server_cmd` under the wrapper."""
    return sys.executable, [WRAPPER, "--wrap", status_path, wire or "-", "--", *server_cmd]


# ---------------------------------------------------------------------------
# Verdicts and their lines.
# ---------------------------------------------------------------------------


class CheckFailed(Exception):
    pass


class Skip(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def diag(message: str) -> None:
    print(f"[{DRIVER}] {message}", file=sys.stderr, flush=True)


def describe(e: BaseException) -> str:
    """An exception as a one-line detail; an ExceptionGroup (anyio task groups) by its leaves."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in e.exceptions)
    return f"{type(e).__name__}: {e}"


def emit(check: str, status: str, detail: str) -> None:
    print(json.dumps({"check": check, "status": status, "detail": detail}, ensure_ascii=False), flush=True)


class Run:
    """State shared by the checks; each driver subclasses it with its SDK's session and callbacks."""

    def __init__(self, status_path: str) -> None:
        self.status_path = status_path  # where the wrapper writes the server's exit status
        self.closing_at = math.inf  # when the runner began closing the client
        self.closed_in: float | None = None  # how long closing took


async def run_one(name: str, check, run: Run) -> bool:
    """Run one check under its timeout and print its line; True if it failed."""
    started = time.monotonic()
    try:
        with anyio.fail_after(CHECK_TIMEOUT):
            detail = await check(run)
        status = "pass"
    except Skip as e:
        status, detail = "skip", str(e)
    except TimeoutError:
        status, detail = "fail", f"timed out after {CHECK_TIMEOUT:.0f} s"
    except CheckFailed as e:
        status, detail = "fail", str(e)
    except Exception as e:  # noqa: BLE001 - one failure must not stop the rest
        status, detail = "fail", describe(e)
    diag(f"{name}: {status} in {time.monotonic() - started:.3f} s")
    emit(name, status, detail)
    return status == "fail"


async def check_shutdown(run: Run) -> str:
    """Runs after the client closed (the runner closes it: the SDK's context must exit where it was entered)."""
    elapsed = run.closed_in
    expect(elapsed is not None, "the client did not close")
    try:
        with open(run.status_path, encoding="utf-8") as f:
            status = json.load(f)
    except (OSError, ValueError):
        raise CheckFailed(
            f"the server did not exit on stdin EOF: the SDK had to kill it ({elapsed:.2f} s to close)"
        ) from None
    early = run.closing_at - status["exited_at"]
    expect(early <= 0, f"the server exited {early:.3f} s before the client closed its stdin")
    expect(status["returncode"] == 0, f"exit status {status['returncode']}")
    expect(elapsed <= 5.0, f"closing took {elapsed:.2f} s")
    return f"exited 0 on stdin EOF; the client closed in {elapsed * 1000:.0f} ms"


# ---------------------------------------------------------------------------
# The runner and the command line.
# ---------------------------------------------------------------------------


def exit_status_path() -> str:
    """A fresh path for the wrapper's exit status: not there until the server exits."""
    fd, path = tempfile.mkstemp(prefix="interop-exit-", suffix=".json")
    os.close(fd)
    os.unlink(path)
    return path


async def run_checks(checks, run: Run, connection, cannot_connect: str = "cannot connect") -> int:
    """Run `checks` in order over `connection`, one line each; the exit code.

    `connection` is an async context manager that is entered connected (the
    first check, `discover`, inspects the handshake). The last check,
    `shutdown`, runs after it closed. Every check gets a line: the ones a
    failed connect or a broken connection kept from running fail as "not run".
    """
    failed = 0
    connected = False
    broken = None  # why the connection ended early, if it did
    ran: set[str] = set()
    # One scope around the whole connection: its deadline bounds the connect, then
    # the close; the SDK's task groups must be entered and left inside it.
    deadline = anyio.CancelScope(deadline=anyio.current_time() + CHECK_TIMEOUT)
    try:
        with deadline:
            async with connection:
                connected = True
                deadline.deadline = math.inf
                for name, check in checks[:-1]:
                    failed += await run_one(name, check, run)
                    ran.add(name)
                deadline.deadline = anyio.current_time() + CHECK_TIMEOUT
                run.closing_at = time.monotonic()
            run.closed_in = time.monotonic() - run.closing_at
    except Exception as e:  # noqa: BLE001
        if not connected:
            emit(checks[0][0], "fail", f"{cannot_connect}: {describe(e)}")
            return not_run(checks[1:], cannot_connect)
        broken = describe(e)
        diag(f"closing the client raised {broken}")
    if not connected:
        emit(checks[0][0], "fail", f"{cannot_connect} within {CHECK_TIMEOUT:.0f} s")
        return not_run(checks[1:], cannot_connect)
    missed = [c for c in checks[:-1] if c[0] not in ran]
    if missed:
        failed += not_run(missed, f"the connection ended: {broken or 'cancelled'}")
    failed += await run_one(*checks[-1], run)
    if os.path.exists(run.status_path):
        os.unlink(run.status_path)
    return 1 if failed else 0


def not_run(checks, why: str) -> int:
    """A fail line for each of `checks`, which could not run; 1."""
    for name, _ in checks:
        emit(name, "fail", f"not run: {why}")
    return 1


def main(argv: list[str], usage: str, drive) -> int:
    """`[--wire FILE] <server command...>`: `drive(server_cmd, wire)` under anyio; its exit code.

    `--wire FILE` (or MCP_INTEROP_WIRE=FILE) records the wire in FILE, emptied first.
    """
    wire = os.environ.get("MCP_INTEROP_WIRE")
    if argv[:1] == ["--wire"]:
        wire, argv = argv[1], argv[2:]
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    if wire:
        wire = os.path.abspath(wire)
        open(wire, "w").close()  # one run per file
    return anyio.run(drive, argv, wire)


if __name__ == "__main__":
    if sys.argv[1:2] != ["--wrap"]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(wrap_main(sys.argv[2:]))
