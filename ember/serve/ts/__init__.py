"""TorchServe's ``ts`` package for handlers: ``ts.context``, ``ts.torch_handler.*``, ``ts.utils``.

Inside ember-serve's worker processes ``import ts`` resolves to this package (and
``import torch`` to ember), so handlers written for TorchServe run unchanged.
"""

__version__ = "0.12.0"
