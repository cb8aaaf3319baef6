"""``torch.fx.passes.shape_prop``: record each node's output shape and dtype."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember.fx.interpreter import Interpreter
from ember.fx.node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records about a tensor value."""

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result, include_contiguity: bool = True) -> TensorMetadata:
    import ember

    memory_format = None
    if include_contiguity:
        for fmt in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
            if result.is_contiguous(memory_format=fmt):
                memory_format = fmt
                break
    return TensorMetadata(
        result.shape, result.dtype, result.requires_grad, result.stride(), memory_format,
        False, {},
    )  # fmt: skip


class ShapeProp(Interpreter):
    """Run the module on example inputs and store, for every node whose value is a tensor
    (or holds tensors), ``node.meta['tensor_meta']`` (a :class:`TensorMetadata`) and
    ``node.meta['type']``."""

    def __init__(self, gm, fake_mode=None) -> None:
        super().__init__(gm)
        self.fake_mode = fake_mode
        self.real_module = self.module

    def run_node(self, n: Node) -> Any:
        """Run ``n`` and record the metadata of its result."""
        from ember._core.tensor import Tensor

        try:
            result = super().run_node(n)
        except Exception as e:
            raise RuntimeError(
                f"ShapeProp error for: node={n.format_node()} with meta={n.meta}"
            ) from e
        found_tensor = False

        def extract(obj):
            nonlocal found_tensor
            if isinstance(obj, Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on ``args``, recording the metadata; return its output."""
        return super().run(*args)
