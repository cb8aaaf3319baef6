"""ptflops' README: get_model_complexity_info() with both of its backends."""

from _models import CNN, cnn_macs
from ptflops import get_model_complexity_info

model = CNN()
for backend in ("pytorch",):  # (the "aten" backend needs TorchDispatchMode: not in ember)
    macs, params = get_model_complexity_info(
        model, (1, 28, 28), as_strings=False, print_per_layer_stat=False, backend=backend
    )
    assert params == sum(p.numel() for p in model.parameters()), (backend, params)
    assert macs >= cnn_macs(), (backend, macs)
    print(backend, macs, params)
