"""Print the op table: ``python -m ember._ops.table [--grep TEXT] [--hand]``.

One row per declared op (``registry.OPS``): name, torch's grad_fn, what it saves (torch's
names; ``_x`` is saved for ember's backward but not shown as ``grad_fn._saved_x``; ``+x``
is saved by the public function after dispatch), the API
members published for it (``registry.publish``) and where it is declared. In-place and renamed
copies (``Op.variant`` / ``Op.into``) show ``<- base``. ``--hand`` lists instead the public
functions and Tensor methods not published through ``publish`` (still wired by hand; the
methods ``class Tensor`` defines in its own body are not counted).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the packages that declare ops of their own (imported so that their ops are in the table)
_PACKAGES = ("ember", "ember.nn.functional", "ember.sparse", "ember.distributions")


def _load() -> None:
    for name in _PACKAGES:
        importlib.import_module(name)


def _where(where: str) -> str:
    path, _, line = where.rpartition(":")
    if path.startswith(_ROOT + os.sep):
        path = "ember/" + os.path.relpath(path, _ROOT)
    return f"{path}:{line}"


def rows() -> list[tuple[str, str, str, str, str]]:
    """Return the table: (name, grad_fn, saves, members, file:line) per declared op."""
    from ember._ops.registry import OPS

    _load()
    out = []
    for o in OPS:
        grad_fn = o.node_cls.__name__ if o.node_cls is not None else "-"
        saves = ",".join(o.save + tuple("+" + n for n in o.post_save)) or "-"
        members = " ".join(o.members)
        if o.variant_of is not None:
            members = (members + " " if members else "") + f"<- {o.variant_of.name}"
        out.append((o.name, grad_fn, saves, members or "-", _where(o.where)))
    return out


def hand_wired() -> list[str]:
    """Return the public names (``ember.<fn>``, ``Tensor.<method>``) not declared through
    ``publish``: the wiring still done by hand."""
    import ember
    from ember._core.tensor import Tensor
    from ember._ops.registry import API, MEMBERS

    _load()
    published = {k for k, (_, _, declared) in MEMBERS.items() if declared}
    out = []
    for name in sorted(API):
        if f"ember.{name}" not in published and hasattr(ember, name):
            out.append(f"ember.{name}")
    for name in sorted(vars(Tensor)):
        member = vars(Tensor)[name]
        if callable(member) and not name.startswith("_") and not _own_method(member):
            if f"Tensor.{name}" not in published:
                out.append(f"Tensor.{name}")
    return out


def _own_method(member) -> bool:
    # a method ``class Tensor`` defines in its own body (``dim``, ``item``, ``backward``...):
    # declared once, where it is defined; nothing wires it
    return getattr(member, "__module__", None) == "ember._core.tensor" and getattr(
        member, "__qualname__", ""
    ).startswith("Tensor.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ember._ops.table", description=__doc__)
    ap.add_argument("--grep", default=None, help="only rows containing TEXT")
    ap.add_argument("--hand", action="store_true", help="list what is still wired by hand")
    args = ap.parse_args(argv)
    if args.hand:
        names = hand_wired()
        for n in names:
            print(n)
        print(f"# {len(names)} public names wired by hand", file=sys.stderr)
        return 0
    table = rows()
    if args.grep:
        table = [r for r in table if any(args.grep in c for c in r)]
    head = ("name", "grad_fn", "saves", "members", "declared at")
    widths = [max(len(r[i]) for r in [head, *table]) for i in range(3)]
    for r in [head, *table]:
        print(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[4]}  {r[3]}")
    print(f"# {len(table)} ops", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
