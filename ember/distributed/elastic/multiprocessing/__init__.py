"""``ember.distributed.elastic.multiprocessing``: see :mod:`.errors`."""
