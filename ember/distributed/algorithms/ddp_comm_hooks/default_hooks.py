"""The default DDP communication hooks, as ``torch.distributed.algorithms.ddp_comm_hooks.
default_hooks``: each ``hook(process_group, bucket)`` starts the bucket's reduction and returns
a future of the averaged gradients (a tensor shaped as ``bucket.buffer()``). A hook averages
by itself: DDP does not divide the gradients of a bucket a hook reduces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
import ember.distributed as dist

__all__ = [
    "allreduce_hook",
    "fp16_compress_hook",
    "bf16_compress_hook",
    "fp16_compress_wrapper",
    "bf16_compress_wrapper",
]


def _group(process_group):
    return dist.group.WORLD if process_group is None else process_group


def _average_async(process_group, tensor):
    """Divide ``tensor`` by the group size in place, start its sum across the group, return
    the future of the result."""
    pg = _group(process_group)
    tensor.div_(pg.size())
    work = dist.all_reduce(tensor, group=pg, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket: dist.GradBucket):
    """Average the bucket's gradients across ``process_group`` (None: the world) with one
    asynchronous ``all_reduce``: what DDP does without a hook."""
    return _average_async(process_group, bucket.buffer())


def _compressed(dtype, process_group, bucket: dist.GradBucket):
    buffer = bucket.buffer()
    reduced = _average_async(process_group, buffer.to(dtype))

    def decompress(fut):
        buffer.copy_(fut.value())
        return buffer

    return reduced.then(decompress)


def fp16_compress_hook(process_group, bucket: dist.GradBucket):
    """Average the bucket's gradients sent as float16 (half the bytes), then cast back into
    the bucket's buffer."""
    return _compressed(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket: dist.GradBucket):
    """Average the bucket's gradients sent as bfloat16, then cast back into its buffer."""
    return _compressed(ember.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook: Callable[[Any, dist.GradBucket], Any]):
    def wrapped(state, bucket: dist.GradBucket):
        buffer = bucket.buffer()
        cast = dist.GradBucket(
            bucket.index(),
            bucket.is_last(),
            buffer.to(dtype),
            bucket.parameters(),
            [tuple(p.shape) for p in bucket.parameters()],
        )

        def decompress(fut):
            buffer.copy_(fut.value())
            return buffer

        return hook(state, cast).then(decompress)

    return wrapped


def fp16_compress_wrapper(hook: Callable[[Any, dist.GradBucket], Any]):
    """Wrap ``hook(state, bucket)`` to run on the bucket cast to float16, the result cast
    back into the bucket's buffer."""
    return _compress_wrapper(ember.float16, hook)


def bf16_compress_wrapper(hook: Callable[[Any, dist.GradBucket], Any]):
    """Wrap ``hook(state, bucket)`` to run on the bucket cast to bfloat16."""
    return _compress_wrapper(ember.bfloat16, hook)
