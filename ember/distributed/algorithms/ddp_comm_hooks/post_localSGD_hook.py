"""Post-local SGD's DDP hook, as ``torch.distributed.algorithms.ddp_comm_hooks.
post_localSGD_hook``: gradients are averaged across the whole group for the first
``start_localSGD_iter`` iterations, then only within a subgroup (or not at all), while a model
averager syncs the parameters now and then."""

from __future__ import annotations

import logging

import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import _average_async
from ember.jit._fork import Future

__all__ = ["PostLocalSGDState", "post_localSGD_hook"]

logger = logging.getLogger(__name__)


class PostLocalSGDState:
    """The state of :func:`post_localSGD_hook`: the global ``process_group`` (None: the
    world), the ``subgroup`` averaged in after ``start_localSGD_iter`` iterations, and whether
    gradients are still averaged in that subgroup then (``post_local_gradient_allreduce``)."""

    __slots__ = [
        "process_group",
        "subgroup",
        "start_localSGD_iter",
        "post_local_gradient_allreduce",
        "iter",
    ]

    def __init__(
        self,
        process_group,
        subgroup,
        start_localSGD_iter: int,
        post_local_gradient_allreduce: bool = True,
    ) -> None:
        logger.info("Local SGD will be started after %s iterations", start_localSGD_iter)
        self.process_group = process_group
        self.subgroup = subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket: dist.GradBucket) -> None:
        """Count an iteration when the last bucket of a backward pass is reduced."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_localSGD_iter:
            logger.info("Start to apply local SGD after %s iterations.", self.iter)


def post_localSGD_hook(state: PostLocalSGDState, bucket: dist.GradBucket):
    """Average the bucket across ``state.process_group`` before local SGD starts, then across
    ``state.subgroup`` (or leave the local gradients as they are when
    ``post_local_gradient_allreduce`` is False)."""
    if state.iter < state.start_localSGD_iter:
        state.maybe_increase_iter(bucket)
        return _average_async(state.process_group, bucket.buffer())
    if not state.post_local_gradient_allreduce:
        return Future(bucket.buffer())
    if state.subgroup is None:
        raise NotImplementedError(
            "post_localSGD_hook: a PostLocalSGDState without a subgroup needs "
            "torch.distributed.new_subgroups, which ember does not provide; pass a subgroup"
        )
    return _average_async(state.subgroup, bucket.buffer())
