"""Run segtools commands in-process under an audit hook that records every write-like
operation on a path under ROOT, and every path under it opened or listed: ``python -m
tests.robustness.audited_run ROOT`` with a JSON list of argvs on stdin; prints one JSON object
(runs, violations, opened, listed) on stdout.

``sys.addaudithook`` cannot be removed once added, so this runs in its own process. CPython
raises the ``open`` event for ``open()``, ``io.open`` and ``os.open`` (with the mode or the
flags), ``mmap.__new__`` for every map, and one event per file-system mutation; together they
cover every way Python code can change a file.
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import sys

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
CANARY = "--canary-write"
MUTATIONS = frozenset({
    "os.rename", "os.replace", "os.remove", "os.rmdir", "os.mkdir", "os.truncate",
    "os.chmod", "os.chown", "os.utime", "os.link", "os.symlink", "os.chflags", "os.lchflags",
    "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod", "shutil.rmtree", "shutil.move",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.chown",
    "fcntl.flock", "fcntl.lockf", "fcntl.fcntl",
})


def main() -> int:
    root = os.path.realpath(sys.argv[1])
    argvs = json.load(sys.stdin)
    violations: list[dict] = []
    opened: set[str] = set()
    listed: set[str] = set()
    busy = [False]

    def under(path) -> str | None:
        if isinstance(path, int):
            try:
                path = os.readlink(f"/proc/self/fd/{path}")
            except OSError:
                return None
        if not isinstance(path, str | bytes | os.PathLike):
            return None
        text = os.fsdecode(path)
        real = os.path.realpath(text)
        return real if real == root or real.startswith(root + os.sep) else None

    def hook(event: str, args: tuple) -> None:
        if busy[0]:
            return
        busy[0] = True
        try:
            if event == "open":
                path, mode, flags = args
                where = under(path)
                if where is None:
                    return
                opened.add(where)
                writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and flags & WRITE_FLAGS)
                if writes:
                    violations.append({"event": event, "path": where, "mode": str(mode),
                                       "flags": flags})
            elif event in ("os.scandir", "os.listdir"):
                where = under(args[0] if args[0] is not None else ".")
                if where is not None:
                    listed.add(where)
            elif event == "mmap.__new__":
                fileno, _length, access, _offset = args
                where = under(fileno) if fileno != -1 else None
                if where is not None and access != mmap.ACCESS_READ:
                    violations.append({"event": event, "path": where, "access": access})
            elif event == "fcntl.fcntl" and args[1] == fcntl.F_GETLK:
                return  # asks who holds a lock (a broker's .lock), takes none
            elif event in MUTATIONS:
                hits = [under(a) for a in args]
                if any(hits):
                    violations.append({"event": event, "args": [repr(a) for a in args]})
        finally:
            busy[0] = False

    from tests.robustness.commands import run_cli

    sys.addaudithook(hook)
    runs = []
    for argv in argvs:
        if argv[0] == CANARY:  # the hook's own test: a write it must report
            with open(argv[1], "ab"):
                os.utime(argv[1])
            continue
        r = run_cli(argv)
        runs.append({"argv": argv, "code": r.code, "stderr": r.stderr,
                     "stdout_bytes": len(r.stdout)})
    json.dump({"runs": runs, "violations": violations, "opened": sorted(opened),
               "listed": sorted(listed)}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
