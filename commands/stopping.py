"""SIGTERM stops the `adgen` program as Ctrl-C (SIGINT) does, and either one stops the compilers
it runs. A build system's timeout, `kill` or a CI runner cancelling a job sends SIGTERM to adgen
alone, and clang processes run in worker threads (and `zig cc`'s own clang child) would go on
for seconds, writing into temporary directories nobody removes. So a signal ends every process
adgen started, children and theirs, and raises KeyboardInterrupt in the main thread: the
temporary directories are removed as the stack unwinds, once the workers' clangs have ended.
From the stop on, no process starts (a worker's next clang is refused with Stopped, by an audit
hook added at the stop on subprocess's and os's ways of starting one), and adgen exits once its worker
threads have: CPython 3.11's Thread.join, when the stop's exception interrupts it, takes a thread
still running for ended (ThreadPoolExecutor's shutdown then returns at once), and a clang such a
thread started after the last look for children would outlive adgen.

Python runs a signal's handler in the main thread between bytecodes only, not while it is in C
code (llvmlite's optimizer, a derivative `adgen check` calls): a thread woken by the signal
itself ends the children at once, and the program after GRACE seconds if it has not ended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

GRACE = 5.0
_STARTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.spawn", "os.system", "os.fork", "os.forkpty"})


class Stopped(KeyboardInterrupt):
    """The program was asked to stop by signal `signum`."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_stopped_by: int | None = None
_stopped_at = 0.0
_raised = False
_lock = threading.Lock()


def install() -> None:
    """For the program only, from its main thread (not for a process that imports adgen)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)
    if os.name == "posix":
        read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        threading.Thread(target=_woken, args=(read,), daemon=True).start()


def status(exc: KeyboardInterrupt) -> int:
    """The exit status of a stop: 128 plus the signal's number, as a shell reports it."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def finish() -> None:
    """Before exiting: after a stop, no thread of adgen's still works, and no process stays behind."""
    if _stopped_by is not None:
        while _working_threads() and time.monotonic() - _stopped_at < GRACE / 2:
            end_descendants(signal.SIGTERM)
            time.sleep(0.01)
        end_descendants(signal.SIGKILL)


def _working_threads() -> list[threading.Thread]:
    """Threads other than this one and daemons, by threading's list (a thread leaves it when it has
    really ended, whatever an interrupted join concluded)."""
    return [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]


def _refuse_starts(event: str, args) -> None:
    """An audit hook: from the stop on, a new process is not started."""
    if _stopped_by is not None and event in _STARTS:
        raise Stopped(_stopped_by)


def _on_signal(signum: int, frame) -> None:
    """In the main thread: unwinds it, once (a second signal does not interrupt the cleanup)."""
    global _raised
    _stop(signum)
    if not _raised:
        _raised = True
        raise Stopped(signum)


def _stop(signum: int) -> None:
    """Ends the children, and from the first stop on, keeps ending them."""
    global _stopped_by, _stopped_at
    with _lock:
        first, _stopped_by = _stopped_by is None, _stopped_by or signum
        if first:
            _stopped_at = time.monotonic()
            sys.addaudithook(_refuse_starts)  # (from the stop on: a hook costs 0.6 us an event, 20 ms a build)
    end_descendants(signal.SIGTERM)
    if first:
        threading.Thread(target=_keep_ending, args=(_stopped_by,), daemon=True).start()


def _woken(read: int) -> None:
    """The signals' numbers, as they come, whatever the main thread is doing."""
    while True:
        got = os.read(read, 1)
        if got and got[0] in (signal.SIGINT, signal.SIGTERM):
            _stop(got[0])


def _keep_ending(signum: int) -> None:
    start = time.monotonic()
    while time.monotonic() - start < GRACE:
        time.sleep(0.05)
        end_descendants(signal.SIGTERM if time.monotonic() - start < GRACE / 2 else signal.SIGKILL)
    end_descendants(signal.SIGKILL)  # the main thread has not unwound in time
    os._exit(128 + signum)


def end_descendants(signum: int) -> None:
    """Sends `signum` to every process this one started, and those they started."""
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, signum)
        except OSError:  # gone already
            pass


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in _parents():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != root:
                found.append(child)
                todo.append(child)
    return found


def _parents() -> list[tuple[int, int]]:
    """(pid, parent pid) of every process: from /proc where there is one, else from ps."""
    if os.path.isdir("/proc/self"):
        pairs = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        stat = f.read()
                except OSError:
                    continue
                pairs.append((int(name), int(stat.rsplit(b")", 1)[1].split()[1])))  # after the command's name
        return pairs
    try:
        listed = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    except OSError:
        return []
    return [(int(a), int(b)) for a, b in (line.split() for line in listed.splitlines() if len(line.split()) == 2)]
