"""``torch.distributed.constants``: the default timeout of process groups."""

from datetime import timedelta

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

# the timeout of a collective when ``init_process_group`` is given none
default_pg_timeout = timedelta(minutes=30)
# ember has no NCCL; torch answers None where NCCL is not built in
default_pg_nccl_timeout = None
