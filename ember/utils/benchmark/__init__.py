"""``ember.utils.benchmark``: ``Timer``, ``Measurement`` and ``Compare``, as
``torch.utils.benchmark`` (Python statements and the Fuzzer; no C++, Callgrind or op_fuzzers).

``Timer`` runs a statement with :mod:`timeit` (``torch`` in its globals is ember): ``timeit(n)``
once, ``blocked_autorange`` in blocks sized so the timer's overhead is negligible until
``min_run_time`` has passed, ``adaptive_autorange`` until the spread is small. A ``Measurement``
prints as torch's and ``Compare`` tabulates measurements by label, row and column. The modules
mirror torch's (``utils.common``, ``utils.timer``, ``utils.compare``).
"""

from ember.utils.benchmark.utils.common import *  # noqa: F403
from ember.utils.benchmark.utils.common import Measurement
from ember.utils.benchmark.utils.compare import *  # noqa: F403
from ember.utils.benchmark.utils.fuzzer import *  # noqa: F403
from ember.utils.benchmark.utils.timer import *  # noqa: F403

# a Measurement prints its class path first; show the public one (as torch shows its own)
Measurement.__module__ = __name__
