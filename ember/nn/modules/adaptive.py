"""AdaptiveLogSoftmaxWithLoss: efficient softmax for large output spaces (Grave et al., 2016)."""

from __future__ import annotations

import itertools
from collections import namedtuple
from collections.abc import Sequence

from ember._core.tensor import Tensor
from ember._ops import API
from ember.nn._functional import activation as F
from ember.nn.modules.container import ModuleList, Sequential
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])
_argmax = API["argmax"]


def _check_cutoffs(cutoffs: list, n_classes: int) -> None:
    if not cutoffs:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    strictly_increasing = all(a < b for a, b in itertools.pairwise(cutoffs))
    in_range = 0 < cutoffs[0] and cutoffs[-1] <= n_classes - 1
    if not (strictly_increasing and in_range and all(int(c) == c for c in cutoffs)):
        raise ValueError(
            "cutoffs should be a sequence of unique, positive integers sorted in an "
            "increasing order, where each value is between 1 and n_classes-1"
        )


def _check_shapes(input: Tensor, target: Tensor) -> None:
    if target.dim() == 1:
        if input.size(0) != target.size(0):
            raise RuntimeError("Input and target should have the same size in the batch dimension.")
        if input.dim() != 2:
            raise RuntimeError(
                "1D target tensor expects 2D input tensors, but found inputs with size "
                f"{input.size()}"
            )
    elif target.dim() == 0:
        if input.dim() != 1:
            raise RuntimeError(
                "0D target tensor expects 1D input tensors, but found inputs with size "
                f"{input.size()}"
            )
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation: frequent classes in a head, the rest in tail clusters.

    ``forward(input, target)`` returns ``_ASMoutput(output, loss)``: the target log-probability
    of each example and their negative mean. ``log_prob`` gives every class's log-probability,
    ``predict`` the most likely class.

    The model: classes ``[0, cutoffs[0])`` (the shortlist) are scored by the head directly; the
    classes of cluster ``c`` (``[cutoffs[c], cutoffs[c+1])``) get
    ``log p_head(column shortlist + c) + log p_c(class - cutoffs[c])``, where cluster ``c``'s
    own softmax runs through a bottleneck of ``in_features // div_value**(c+1)`` features.
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [*cutoffs, n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = cutoffs[0]
        self.n_clusters = len(cutoffs)
        # the head scores the shortlist plus one column per cluster
        self.head_size = self.shortlist_size + self.n_clusters
        where = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **where)
        self.tail = ModuleList()
        for c, (lo, hi) in enumerate(self._cluster_ranges()):
            width = int(in_features // div_value ** (c + 1))
            self.tail.append(
                Sequential(
                    Linear(in_features, width, bias=False, **where),
                    Linear(width, hi - lo, bias=False, **where),
                )
            )

    def _cluster_ranges(self) -> list[tuple[int, int]]:
        # [lo, hi) class range of each tail cluster
        return list(itertools.pairwise(self.cutoffs))

    def reset_parameters(self) -> None:
        """Reset the parameters as ``__init__`` initialises them."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        _check_shapes(input_, target_)
        single = target_.dim() == 0
        x = input_.unsqueeze(0) if single else input_
        target = target_.unsqueeze(0) if single else target_
        n, short = target.size(0), self.shortlist_size

        # the head column each target reads: itself in the shortlist, else its cluster's
        column = target.new_empty(n)
        tail_part = x.new_zeros(n)
        covered = 0
        for c, (lo, hi) in enumerate([(0, short), *self._cluster_ranges()]):
            rows = ((target >= lo) & (target < hi)).nonzero().flatten()
            if rows.numel() == 0:
                continue  # an empty cluster's projection is not run
            covered += rows.numel()
            if c == 0:
                column.index_copy_(0, rows, target.index_select(0, rows))
                continue
            column.index_fill_(0, rows, short + c - 1)
            inside = target.index_select(0, rows) - lo
            scores = F.log_softmax(self.tail[c - 1](x.index_select(0, rows)), dim=1)
            tail_part.index_copy_(0, rows, scores.gather(1, inside.unsqueeze(1)).squeeze(1))
        if covered != n:
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], "
                f"but values in range [{target.min().item()}, {target.max().item()}] "
                "were found. "
            )
        head = F.log_softmax(self.head(x), dim=1)
        output = tail_part + head.gather(1, column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output.squeeze(0) if single else output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """Return the log of the full distribution from ``input`` and ``self.head``'s output."""
        head = F.log_softmax(head_output, dim=1)
        short = self.shortlist_size
        full = input.new_empty((head_output.size(0), self.n_classes))
        full[:, :short] = head[:, :short]
        for c, (lo, hi) in enumerate(self._cluster_ranges()):
            within = F.log_softmax(self.tail[c](input), dim=1)
            full[:, lo:hi] = within + head[:, short + c].unsqueeze(1)
        return full

    def log_prob(self, input: Tensor) -> Tensor:
        """Return the log-probabilities of all ``n_classes`` classes, shape ``(N, n_classes)``."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """Return the most likely class of each example, as ``log_prob(input).argmax(1)``."""
        head_output = self.head(input)
        guess = _argmax(head_output, dim=1)
        # a row whose best head column is a cluster needs that cluster's full distribution
        unsure = guess >= self.shortlist_size
        if not unsure.any():
            return guess
        if unsure.all():
            return _argmax(self._get_full_log_prob(input, head_output), dim=1)
        full = self._get_full_log_prob(input[unsure], head_output[unsure])
        guess[unsure] = _argmax(full, dim=1)
        return guess
