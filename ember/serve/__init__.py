"""``ember.serve``: TorchServe's model archives and HTTP APIs on ember.

- :mod:`ember.serve.archiver` writes ``.mar`` archives (``ember-model-archiver``).
- :mod:`ember.serve.server` runs the inference (8080), management (8081) and metrics (8082)
  APIs on uvicorn + Starlette (``ember-serve``), with :mod:`ember.serve.wlm`'s worker
  processes and dynamic batching.
- :mod:`ember.serve.ts` is TorchServe's ``ts`` package for handlers (``ts.context``,
  ``ts.torch_handler.base_handler``...): in workers ``import ts`` resolves to it.

A model store is trusted input: an archive's handler and model file are Python code that the
workers run. Only archives in the store are served; state dicts load with
``weights_only=True``.

Needs ``pip install 'ember[serve]'`` (uvicorn, starlette, prometheus_client, pillow).
"""

__all__: list[str] = []  # import the submodules: ember.serve.archiver, ember.serve.server
