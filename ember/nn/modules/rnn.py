"""RNN, LSTM, GRU and their single-step cells.

Each layer and direction is one input projection (one GEMM over all timesteps) followed by the
fused recurrence ``rnn_layer`` (``nn/_functional/rnn.py``): NumPy loops over time with one GEMM
per step and explicit BPTT in backward. The cells are one step written with ember ops, as
torch's CPU cells are (so their outputs have torch's grad_fn names).
"""

from __future__ import annotations

import math
import numbers
import warnings
import weakref

import numpy as np

import ember
from ember._core.tensor import Tensor
from ember.nn import init
from ember.nn._functional.dropout import dropout as _dropout
from ember.nn._functional.rnn import cell_step, rnn_layer
from ember.nn.modules.linear import _linear
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence, _packed_rows

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _batch_order(state: Tensor, order: Tensor) -> Tensor:
    # a state's rows (dim 1: layers x directions, batch, features) in a packed batch's order
    return state.index_select(1, order)


def _weak_refs(weights: list) -> list:
    return [None if w is None else weakref.ref(w) for w in weights]


def _type_check(name: str, value, kind) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")


class RNNBase(Module):
    """Base class of RNN, LSTM and GRU: parameters, checks, and the multi-layer loop."""

    __constants__ = [
        "mode",
        "input_size",
        "hidden_size",
        "num_layers",
        "bias",
        "batch_first",
        "dropout",
        "bidirectional",
        "proj_size",
    ]

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self._flat_weight_refs: list = []
        num_directions = 2 if bidirectional else 1
        if (
            not isinstance(dropout, numbers.Number)
            or not 0 <= dropout <= 1
            or isinstance(dropout, bool)
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        _type_check("bias", bias, bool)
        _type_check("batch_first", batch_first, bool)
        _type_check("input_size", input_size, int)
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        _type_check("hidden_size", hidden_size, int)
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                shapes = [(gate_size, layer_input), (gate_size, real_hidden)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                tail = ("", "_reverse")[direction]
                names = [pattern.format(layer, tail) for pattern in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(ember.empty(shape, dtype=dtype)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self._init_flat_weights()
        self.reset_parameters()

    def _init_flat_weights(self) -> None:
        self._flat_weights = [getattr(self, n, None) for n in self._flat_weights_names]
        self._flat_weight_refs = _weak_refs(self._flat_weights)

    def __setattr__(self, attr, value) -> None:
        # keep the ordered weight list in step when a parameter is replaced
        names = self.__dict__.get("_flat_weights_names")
        if names is not None and attr in names:
            self._flat_weights[names.index(attr)] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self) -> None:
        """Do nothing: parameters need no flat buffer on the CPU (torch: cuDNN only)."""

    def _apply(self, fn, recurse=True):
        self._flat_weight_refs = []
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()
        return ret

    def reset_parameters(self) -> None:
        """Draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        bound = 0.0
        if self.hidden_size > 0:
            bound = 1.0 / math.sqrt(self.hidden_size)  # the same float as torch's
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    def _update_flat_weights(self) -> None:
        for ref, name in zip(self._flat_weight_refs, self._flat_weights_names):
            w = getattr(self, name, None)
            if w is not None and ref is not None and ref() is not w:
                self._init_flat_weights()
                return

    def __getstate__(self):
        self._update_flat_weights()
        state = self.__dict__.copy()
        del state["_flat_weight_refs"]
        return state

    def __setstate__(self, d):
        super().__setstate__(d)
        self._flat_weight_refs = _weak_refs(self._flat_weights)

    # ----------------------------------------------------------------------------- checks

    def check_input(self, input: Tensor, batch_sizes) -> None:
        """Raise torch's errors for an input of the wrong dtype, rank or size."""
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})"
            )
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.size(-1)}"
            )

    def get_expected_hidden_size(self, input: Tensor, batch_sizes) -> tuple[int, int, int]:
        """Return the shape the hidden state must have for this input."""
        return self._state_shape(input, batch_sizes, self.proj_size or self.hidden_size)

    def check_hidden_size(
        self, hx: Tensor, expected: tuple, msg: str = "Expected hidden size {}, got {}"
    ) -> None:
        """Raise torch's error when ``hx`` does not have the expected size."""
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(expected, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes) -> None:
        """Raise torch's errors for a bad input or hidden state."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None):
        """Return the hidden state reordered by ``permutation`` (packed input)."""
        if permutation is None:
            return hx
        return _batch_order(hx, permutation)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ----------------------------------------------------------------------------- running

    def _prepare(self, input):
        """Unpack a PackedSequence or add the batch dim: (input, batch_sizes, sorted, unsorted,
        is_batched)."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            return data, batch_sizes, sorted_indices, unsorted_indices, True
        if input.dim() not in (2, 3):
            name = "RNN" if self.mode.startswith("RNN") else self.mode
            tail = " tensor instead" if name == "RNN" else " instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail}")
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, None, None, None, is_batched

    def _state_shape(self, input: Tensor, batch_sizes, size: int) -> tuple[int, int, int]:
        # (layers x directions, batch, size); a packed batch's first step holds every row
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.size(int(not self.batch_first))
        return (self.num_layers * (1 + int(self.bidirectional)), batch, size)

    def _zeros(self, input: Tensor, batch_sizes, size: int) -> Tensor:
        return ember.zeros(self._state_shape(input, batch_sizes, size), dtype=input.dtype)

    def _run(self, input: Tensor, hx: Tensor, cx: Tensor | None, batch_sizes) -> tuple:
        """Run every layer; return (output, h_n, c_n) with output time-major (or packed)."""
        bs = None
        if batch_sizes is not None:
            bs = batch_sizes._data
            T, B = bs.size, int(bs[0]) if bs.size else 0
            # packed rows -> a padded (T, B, F) batch, sorted longest first
            where = np.full(T * B, input.shape[0], dtype=np.int64)
            rows = _packed_rows(bs, B, 1)
            where[rows] = np.arange(rows.size)
            pad = input.new_zeros((1, input.shape[1]))
            x = ember.cat([input, pad]).index_select(0, ember.from_numpy(where))
            x = x.view(T, B, input.shape[1])
        elif self.batch_first:
            x = input.transpose(0, 1)
        else:
            x = input
        D = 2 if self.bidirectional else 1
        w = self._flat_weights
        per = len(w) // (self.num_layers * D)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                p = w[k * per : (k + 1) * per]
                w_ih, w_hh = p[0], p[1]
                b_ih, b_hh = (p[2], p[3]) if self.bias else (None, None)
                w_hr = p[-1] if self.proj_size > 0 else None
                xp = _linear(x, w_ih, b_ih)
                c0 = cx[k] if cx is not None else None
                res = rnn_layer(xp, hx[k], c0, w_hh, b_hh, w_hr, self.mode, d == 1, bs)
                outs.append(res[0])
                h_n.append(res[1])
                if cx is not None:
                    c_n.append(res[2])
            x = outs[0] if D == 1 else ember.cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                if bs is None:
                    x = _dropout(x, self.dropout, True)
                else:  # torch drops out the packed rows: draw the mask in packed order
                    flat = x.reshape(-1, x.shape[2])
                    kept = _dropout(
                        flat.index_select(0, ember.from_numpy(rows)), self.dropout, True
                    )
                    pad = kept.new_zeros((1, kept.shape[1]))
                    x = ember.cat([kept, pad]).index_select(0, ember.from_numpy(where))
                    x = x.view(T, B, kept.shape[1])
        h = ember.stack(h_n)
        c = ember.stack(c_n) if cx is not None else None
        if batch_sizes is not None:
            out = x.reshape(-1, x.shape[2]).index_select(0, ember.from_numpy(rows))
        elif self.batch_first:
            out = x.transpose(0, 1)
        else:
            out = x
        return out, h, c

    def _forward_h(self, input, hx: Tensor | None):
        """The forward of RNN and GRU (a single state ``h``)."""
        self._update_flat_weights()
        orig = input
        input, batch_sizes, sorted_idx, unsorted_idx, is_batched = self._prepare(input)
        if batch_sizes is None and hx is not None:
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D "
                        "tensor"
                    )
                hx = hx.unsqueeze(1)
            elif hx.dim() != 3:
                raise RuntimeError(
                    f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor"
                )
        if hx is None:
            hx = self._zeros(input, batch_sizes, self.hidden_size)
        else:
            hx = self.permute_hidden(hx, sorted_idx)
        self.check_forward_args(input, hx, batch_sizes)
        out, h, _ = self._run(input, hx, None, batch_sizes)
        if isinstance(orig, PackedSequence):
            packed = PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx)
            return packed, self.permute_hidden(h, unsorted_idx)
        if not is_batched:
            out, h = out.squeeze(1 if not self.batch_first else 0), h.squeeze(1)
        return out, h


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        # nonlinearity is the fourth positional parameter (after num_layers) or a keyword
        positional = len(args) > 3
        choice = args[3] if positional else kwargs.pop("nonlinearity", "tanh")
        if positional:
            args = (*args[:3], *args[4:])
        self.nonlinearity = choice
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if choice not in modes:
            raise ValueError(f"Unknown nonlinearity '{choice}'. Select from 'tanh' or 'relu'.")
        super().__init__(modes[choice], *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        """Return ``(output, h_n)``; ``output`` is a PackedSequence when ``input`` is one."""
        return self._forward_h(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit: gates r, z and candidate n, ``h' = (1 - z) n + z h``."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        """Return ``(output, h_n)``; ``output`` is a PackedSequence when ``input`` is one."""
        return self._forward_h(input, hx)


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o; cell ``c' = f c + i g``, ``h' = o tanh(c')``
    (projected by ``W_hr`` when ``proj_size > 0``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes) -> tuple[int, int, int]:
        """Return the shape the cell state must have for this input."""
        return self._state_shape(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden, batch_sizes) -> None:
        """Raise torch's errors for a bad input or (h_0, c_0) pair."""
        self.check_input(input, batch_sizes)
        shapes = (
            self.get_expected_hidden_size(input, batch_sizes),
            self.get_expected_cell_size(input, batch_sizes),
        )
        for k, (state, shape) in enumerate(zip(hidden, shapes)):
            self.check_hidden_size(state, shape, f"Expected hidden[{k}] size {{}}, got {{}}")

    def permute_hidden(self, hx, permutation: Tensor | None):
        """Return the (h, c) states reordered by ``permutation`` (packed input)."""
        if permutation is None:
            return hx
        return tuple(_batch_order(state, permutation) for state in hx)

    def forward(self, input, hx: tuple[Tensor, Tensor] | None = None):
        """Return ``(output, (h_n, c_n))``; ``output`` is packed when ``input`` is."""
        self._update_flat_weights()
        orig = input
        input, batch_sizes, sorted_idx, unsorted_idx, is_batched = self._prepare(input)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = (
                self._zeros(input, batch_sizes, real_hidden),
                self._zeros(input, batch_sizes, self.hidden_size),
            )
        elif batch_sizes is not None:
            hx = self.permute_hidden(hx, sorted_idx)
        else:
            if is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError(
                        "For batched 3-D input, hx and cx should also be 3-D but got "
                        f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                    )
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError(
                        "For unbatched 2-D input, hx and cx should also be 2-D but got "
                        f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                    )
                hx = tuple(state.unsqueeze(1) for state in hx)
        self.check_forward_args(input, hx, batch_sizes)  # once, whichever way hx was made
        out, h, c = self._run(input, hx[0], hx[1], batch_sizes)
        if isinstance(orig, PackedSequence):
            packed = PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx)
            return packed, self.permute_hidden((h, c), unsorted_idx)
        if not is_batched:
            out = out.squeeze(0 if self.batch_first else 1)
            h, c = h.squeeze(1), c.squeeze(1)
        return out, (h, c)


# --------------------------------------------------------------------------------- cells


class RNNCellBase(Module):
    """Base class of the cells: ``weight_ih``, ``weight_hh`` and optional biases."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        g = num_chunks * hidden_size
        self.weight_ih = Parameter(ember.empty((g, input_size), dtype=dtype))
        self.weight_hh = Parameter(ember.empty((g, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ember.empty(g, dtype=dtype))
            self.bias_hh = Parameter(ember.empty(g, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        # only the settings that differ from the defaults (bias=True, tanh) are shown
        parts = [f"{self.input_size}, {self.hidden_size}"]
        d = self.__dict__
        if d.get("bias", True) is not True:
            parts.append(f"bias={d['bias']}")
        if d.get("nonlinearity", "tanh") != "tanh":
            parts.append(f"nonlinearity={d['nonlinearity']}")
        return ", ".join(parts)

    def reset_parameters(self) -> None:
        """Draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        bound = 0.0
        if self.hidden_size > 0:
            bound = 1.0 / math.sqrt(self.hidden_size)  # the same float as torch's
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _check(self, name: str, input: Tensor, hx, what: str = "hidden"):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for i, h in enumerate(hx if isinstance(hx, tuple) else (hx,)):
            if h is not None and h.dim() not in (1, 2):
                label = f"hx[{i}]" if isinstance(hx, tuple) else what
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D instead")
        return input.dim() == 2

    def _step(self, mode: str, input: Tensor, hx: Tensor, cx: Tensor | None) -> tuple:
        if input.size(1) != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}"
            )
        for i, h in enumerate((hx,) if cx is None else (hx, cx)):
            if h.size(0) != input.size(0):
                raise RuntimeError(
                    f"Input batch size {input.size(0)} doesn't match hidden{i} batch size "
                    f"{h.size(0)}"
                )
            if h.size(1) != self.hidden_size:
                raise RuntimeError(
                    f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, expected "
                    f"{self.hidden_size}"
                )
        xp = _linear(input, self.weight_ih, self.bias_ih)
        return cell_step(mode, xp, hx, cx, self.weight_hh, self.bias_hh)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """Return the next hidden state ``h'``."""
        batched = self._check("RNNCell", input, hx)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h = self._step(mode, input, hx, None)[0]
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns ``(h', c')``."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple:
        """Return ``(h', c')``."""
        batched = self._check("LSTMCell", input, tuple(hx) if hx is not None else ())
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = self._step("LSTM", input, hx[0], hx[1])
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: returns ``h'``."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """Return the next hidden state ``h'``."""
        batched = self._check("GRUCell", input, hx)
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        h = self._step("GRU", input, hx, None)[0]
        return h if batched else h.squeeze(0)
