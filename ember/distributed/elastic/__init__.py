"""``ember.distributed.elastic``: what scripts started by a launcher import from torch's
elastic package (``multiprocessing.errors.record``). Elastic restarts are not implemented."""
