"""Inspect the MNIST CNN with the model tools PyTorch users reach for, running on ember.

torchinfo prints a layer-by-layer summary, thop counts multiply-accumulates and parameters,
and torchviz draws the autograd graph of the output to a PNG. These libraries say
``import torch``; ``ember.install_as_torch()`` (first thing, before anything imports torch)
makes that import give ember, so they run unmodified. Install them without real torch:

    pip install --no-deps torchinfo thop torchviz && pip install graphviz
    apt-get install graphviz          # the `dot` program that renders the graph

    python examples/inspect_model.py [--out lenet_graph]
"""

from __future__ import annotations

import argparse
import copy
import shutil

import ember

ember.install_as_torch()  # before anything imports torch

import torch  # noqa: E402  (ember, from here on)
from mnist import LeNet  # noqa: E402


def _missing(lib: str) -> None:
    print(f"[{lib} is not installed: pip install --no-deps {lib}]\n")


def summary(model, x) -> None:
    """torchinfo's table: layers, output shapes, parameters, mult-adds, sizes."""
    try:
        import torchinfo
    except ImportError:
        return _missing("torchinfo")
    print(torchinfo.summary(model, input_data=x, verbose=0, depth=2), end="\n\n")


def count(model, x) -> None:
    """thop's MACs and parameters (on a copy: thop leaves counters on the modules)."""
    try:
        from thop import clever_format, profile
    except ImportError:
        return _missing("thop")
    macs, params = profile(copy.deepcopy(model), inputs=(x,), verbose=False)
    macs_s, params_s = clever_format([macs, params], "%.3f")
    print(f"thop: {macs_s} MACs, {params_s} parameters ({int(macs)} / {int(params)})\n")


def graph(model, x, out: str) -> None:
    """torchviz's drawing of the backward graph, rendered to ``out``.png by graphviz."""
    try:
        from torchviz import make_dot
    except ImportError:
        return _missing("torchviz")
    dot = make_dot(model(x), params=dict(model.named_parameters()))
    if shutil.which("dot") is None:
        path = dot.save(f"{out}.gv")
        print(
            f"torchviz: graphviz's `dot` program is not installed, so no PNG was rendered; "
            f"the graph's source is in {path} (apt-get install graphviz, then rerun)"
        )
        return
    path = dot.render(out, format="png", cleanup=True)
    print(f"torchviz: autograd graph rendered to {path}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="lenet_graph", help="the graph's file, without .png")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    model = LeNet()
    x = torch.randn(1, 1, 28, 28)
    print(f"torch here is {torch.__name__} {torch.__version__}\n")
    summary(model, x)
    count(model, x)
    graph(model, x, args.out)


if __name__ == "__main__":
    main()
