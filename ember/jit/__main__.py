"""``python -m ember.jit``: look inside and run TorchScript archives without trusting them.

- ``inspect model.pt``: parameters and buffers (shapes, dtypes), methods, the graph of
  ``forward`` (compiled, not run), extra files, total size.
- ``run model.pt --input SHAPE|file.npy [--input ...]``: run ``forward`` on random (seeded)
  or ``.npy`` inputs and print the output.

A file ember refuses (a pickle naming code, source outside TorchScript, an op ember lacks)
exits with status 2 and one line on stderr saying what was refused.
"""

from __future__ import annotations

import argparse
import sys
import warnings


def _inspect(path: str) -> None:
    from ember.jit._load import inspect_archive

    info = inspect_archive(path)
    print(f"archive: {path} ({info['size']} bytes)")
    print(f"module: {info['class']}")
    tensors = info["tensors"]
    total = 0
    print(f"tensors ({len(tensors)}):")
    for name, (shape, dtype, kind) in tensors.items():
        numel = 1
        for s in shape:
            numel *= s
        total += numel
        print(f"  {name:40s} {kind:9s} {dtype:15s} {list(shape)}")
    print(f"  total elements: {total}")
    print("methods:")
    for q, names in info["methods"].items():
        print(f"  {q}: {', '.join(names)}")
    if info["functions"]:
        print("functions: " + ", ".join(info["functions"]))
    print("extra files:" + ("" if info["extra"] else " none"))
    for name, size in info["extra"].items():
        print(f"  {name} ({size} bytes)")
    unit, cu = info["unit"], info["cu"]
    forward = unit.classes[info["class"]].methods.get("forward")
    if forward is not None:
        print("graph of forward:")
        print(str(cu.graph_of(forward)).rstrip())


def _input(spec: str, seed: int):
    import numpy as np

    import ember

    if spec.endswith(".npy"):
        return ember.tensor(np.load(spec, allow_pickle=False))
    shape = [int(s) for s in spec.replace("x", ",").split(",") if s.strip()]
    return ember.tensor(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def _run(path: str, inputs: list[str]) -> None:
    import numpy as np

    import ember

    m = ember.jit.load(path, map_location="cpu")
    m.eval()
    args = [_input(s, i) for i, s in enumerate(inputs)]
    with ember.no_grad():
        out = m(*args)
    np.set_printoptions(threshold=64, edgeitems=3)
    for i, o in enumerate(out if isinstance(out, (tuple, list)) else [out]):
        if isinstance(o, ember.Tensor):
            print(f"output {i}: shape {list(o.shape)} dtype {o.dtype}")
            print(o.numpy())
        else:
            print(f"output {i}: {o!r}")


def main(argv: list[str] | None = None) -> int:
    """Entry point; return the exit status."""
    p = argparse.ArgumentParser(prog="python -m ember.jit", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("inspect", help="show what an archive holds (runs nothing)")
    pi.add_argument("file")
    pr = sub.add_parser("run", help="run forward on random or .npy inputs")
    pr.add_argument("file")
    pr.add_argument("--input", action="append", required=True, help="a shape (2,3) or a .npy")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore", DeprecationWarning)
    from ember.jit._load import UnsafeArchiveError

    try:
        if a.cmd == "inspect":
            _inspect(a.file)
        else:
            _run(a.file, a.input)
    except UnsafeArchiveError as e:
        print(f"ember.jit: refused {a.file}: {_one_line(e)}", file=sys.stderr)
        return 2
    except (RuntimeError, ValueError, OSError) as e:
        print(f"ember.jit: cannot load {a.file}: {_one_line(e)}", file=sys.stderr)
        return 2
    return 0


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


if __name__ == "__main__":
    sys.exit(main())
