"""``ember.distributed.algorithms``: ``ddp_comm_hooks`` (DDP communication hooks)."""
