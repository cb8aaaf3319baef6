"""How ``python -m ember.distributed.run`` starts a rank under ``mpiexec``: run the training
script (or ``-m`` module) in this process and write its exit code to a status file, so the
launcher learns which rank failed with which code and stops the rest at once (``mpiexec``
alone waits for every rank).

Usage: ``python -m ember.distributed._entry STATUS_FILE [-m] SCRIPT [ARGS...]``.
"""

from __future__ import annotations

import os
import runpy
import sys


def _write(path: str, code: int) -> None:
    with open(path, "w") as fh:
        fh.write(str(code))


def run_script(argv: list[str]) -> None:
    """Run ``[-m] SCRIPT [ARGS...]`` in this process as ``__main__``."""
    module = argv[0] == "-m"
    rest = argv[1:] if module else argv
    sys.argv = rest
    if module:
        runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(rest[0])))
        runpy.run_path(rest[0], run_name="__main__")


def main(argv: list[str]) -> None:
    """Run the script described by ``argv`` and record how it ended (and, in
    ``STATUS_FILE.pid``, this process's id: a rank killed by a signal writes no status, and
    the launcher tells which one it was by its process having gone)."""
    status = argv[0]
    _write(status + ".pid", os.getpid())
    try:
        run_script(argv[1:])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        _write(status, code)
        raise
    except BaseException:
        _write(status, 1)
        raise
    _write(status, 0)


if __name__ == "__main__":
    main(sys.argv[1:])
