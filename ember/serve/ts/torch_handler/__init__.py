"""``ts.torch_handler``: TorchServe's handler classes, on ember."""
