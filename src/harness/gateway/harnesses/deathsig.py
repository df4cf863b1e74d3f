"""Harnesses die with the daemon: each is started through a tiny exec wrapper that sets
``PR_SET_PDEATHSIG`` (SIGKILL) and then becomes the harness.

``preexec_fn`` would do the same in the forked child, but it is unsafe in a process with threads (the
daemon's actors), so a separate interpreter (``python -I -S``) sets the signal and ``execv``s
the harness: same pid, same session, the harness's own argv. The signal fires when the thread that
forked the child ends: harnesses are spawned from the event loop's thread, which lives as long as
the daemon. It does not reach the harness's own children, nor survive a setuid exec: a restarted
daemon stops those (``survivors``). If the daemon died before the signal was set, the wrapper sees
another parent and exits rather than start an agent nobody supervises.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

PR_SET_PDEATHSIG = 1

_WRAPPER = (
    "import ctypes,os,sys\n"
    f"ctypes.CDLL(None).prctl({PR_SET_PDEATHSIG},{int(signal.SIGKILL)},0,0,0)\n"
    "if os.getppid()!=int(sys.argv[1]):os._exit(1)\n"
    "try:os.execv(sys.argv[2],sys.argv[3:])\n"
    "except OSError as e:sys.exit(f'harness: cannot start {sys.argv[2]}: {e.strerror}')\n"
)


def resolve_program(name: str, env: Mapping[str, str], cwd: Path) -> str:
    """The executable ``name`` runs, as ``execvp`` in ``cwd`` with ``env``'s PATH would find it;
    ``FileNotFoundError`` (or ``PermissionError``) as starting it directly would raise."""
    if os.sep in name:
        path = cwd / name
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
        if not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
        return str(path)
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    return str(Path(cwd, found))


def dying_with_daemon(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> tuple[str, ...]:
    """``argv`` run through the wrapper, so it is SIGKILLed when the daemon dies (Linux; elsewhere
    ``argv`` as it is)."""
    if not sys.platform.startswith("linux"):
        return tuple(argv)
    program = resolve_program(argv[0], env, cwd)
    return (sys.executable, "-I", "-S", "-c", _WRAPPER, str(os.getpid()), program, *argv)
