"""``python -m ember run script.py [args...]`` / ``python -m ember run -m module [args...]``.

Runs a program with ``torch`` and every ``torch.*`` module resolved to ember's
(:func:`ember.install_as_torch`), in the process and in the child processes it starts.
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = (
    "usage: python -m ember run script.py [args...]\n"
    "       python -m ember run -m module [args...]\n\n"
    "Runs a PyTorch program on ember: `import torch` anywhere in the program, in the\n"
    "libraries it uses and in its child processes gives ember."
)


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m ember``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return
    if not argv or argv[0] != "run" or len(argv) < 2 or argv[1:] == ["-m"]:
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    from ember._standin import install_as_torch

    install_as_torch()
    if argv[1] == "-m":
        module, rest = argv[2], argv[3:]
        sys.argv = [module, *rest]  # run_module puts the module's file in sys.argv[0]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        script, rest = argv[1], argv[2:]
        if not os.path.exists(script):
            print(f"python -m ember run: can't open file {script!r}", file=sys.stderr)
            raise SystemExit(2)
        sys.argv = [script, *rest]
        # as `python script.py` does: the script's folder, not the working folder, comes first
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
