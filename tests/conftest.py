"""Test-wide fixtures.

Random test inputs come from module-level NumPy generators. Under pytest-xdist the tests a worker
runs, and so the numbers each test draws, would depend on scheduling; reseeding every generator
from the test's own id makes each test see the same inputs in every run, alone or in parallel.

A Tensor subclass installs the ``__torch_function__`` wrappers for the rest of its process
(``ember.overrides``). Test modules define subclasses at import, so the suite takes the
wrappers off after collection and after every test: each test runs as a program that never
subclassed Tensor, unless it makes subclass instances itself.
"""

import hashlib
import sys

import numpy as np
import pytest

import ember.overrides as _overrides


@pytest.fixture(autouse=True)
def _deterministic_inputs(request):
    seed = int.from_bytes(hashlib.sha256(request.node.nodeid.encode()).digest()[:8], "little")
    for name in ("tests.oracle.helper", request.module.__name__):
        module = sys.modules.get(name)
        if module is not None and isinstance(getattr(module, "_rng", None), np.random.Generator):
            module._rng = np.random.default_rng(seed)
    yield
    _overrides._uninstall()


def pytest_collection_finish(session):
    _overrides._uninstall()
