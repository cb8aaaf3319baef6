"""User code: the device/backend modules and type-alias modules scripts import on a CPU-only
machine (``torch.cpu``, ``torch.nn.attention``, ``torch.backends.cuda`` SDPA switches,
``torch.types``, ``torch.nn.common_types``, ``torch.utils.hooks``), and ``GradScaler('cpu')``."""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet

SNIPPETS = {
    "sdpa_kernel": """
        from torch.nn.attention import SDPBackend, sdpa_kernel
        print(list(SDPBackend.__members__), SDPBackend.MATH, repr(SDPBackend.MATH))
        print(SDPBackend.MATH.value, SDPBackend.FLASH_ATTENTION.name)
        q = torch.linspace(-1, 1, 24).reshape(1, 2, 3, 4)
        cuda = torch.backends.cuda
        with sdpa_kernel(SDPBackend.MATH):
            print(F.scaled_dot_product_attention(q, q, q)[0, 0, 0])
            print(cuda.flash_sdp_enabled(), cuda.math_sdp_enabled())
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], set_priority=True):
            print(cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(),
                  cuda.cudnn_sdp_enabled())
        print(cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled())
        try:
            with sdpa_kernel("math"):
                pass
        except AssertionError as e:
            print("AssertionError", e)
        cuda.enable_flash_sdp(False)
        print(cuda.flash_sdp_enabled())
        cuda.enable_flash_sdp(True)
        with cuda.sdp_kernel(enable_flash=False, enable_math=True):
            print(cuda.flash_sdp_enabled())
        @sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)
        def f():
            return cuda.math_sdp_enabled()
        print(f(), cuda.flash_sdp_enabled())
    """,
    "torch_cpu": """
        import torch.cpu
        print(torch.cpu.is_available(), torch.cpu.device_count(), torch.cpu.current_device())
        print(torch.cpu.synchronize(), torch.cpu.is_initialized(), torch.cpu.set_device("cpu"))
        s = torch.cpu.current_stream()
        with torch.cpu.stream(torch.cpu.Stream()):
            print(type(s).__name__, torch.cpu.Event().query())
        with torch.cpu.amp.autocast():
            print(torch.ones(2).sum())
        print(torch.cpu.amp.GradScaler().get_scale())
    """,
    "type_alias_modules": """
        from torch.types import Device, Number
        from torch.nn.common_types import _size_2_t, _size_any_t, _ratio_2_t
        from torch.utils.hooks import RemovableHandle
        def make(device: Device = None, size: _size_2_t = 3, scale: Number = 1) -> torch.Tensor:
            return torch.ones(size, size, device=device) * scale
        print(make(size=2), _size_any_t is not None, _ratio_2_t is not None)
        h = nn.Linear(2, 2).register_forward_hook(lambda m, i, o: None)
        print(isinstance(h, RemovableHandle), hasattr(torch.utils, "hooks"))
    """,
    "grad_scaler_cpu_loop": """
        model = nn.Linear(4, 2)
        with torch.no_grad():
            model.weight.copy_(torch.linspace(-1, 1, 8).view(2, 4))
            model.bias.zero_()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu", growth_interval=2)
        print(scaler.is_enabled(), scaler.get_scale(), scaler.state_dict())
        x = torch.linspace(0, 1, 12).view(3, 4)
        for i in range(3):
            loss = model(x).pow(2).mean()
            scaled = scaler.scale(loss)
            print(round(scaled.item() / scaler.get_scale(), 5), scaled.grad_fn)
            scaled.backward()
            scaler.unscale_(opt)
            print(model.weight.grad)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            print(scaler.get_scale(), scaler._get_growth_tracker())
        # an inf gradient: the step is skipped and the scale backs off
        loss = model(x).sum() * float("inf")
        scaler.scale(loss).backward()
        before = model.weight.clone()
        print(scaler.step(opt), torch.equal(before, model.weight))
        scaler.update()
        print(scaler.get_scale(), scaler.state_dict())
        other = torch.amp.GradScaler("cpu")
        other.load_state_dict(scaler.state_dict())
        print(other.get_scale(), other.state_dict())
        print(scaler.scale([loss, (loss, loss)])[1][0])
    """,
    "grad_scaler_errors": """
        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        scaler.scale(model(torch.ones(1, 2)).sum()).backward()
        scaler.unscale_(opt)
        for call in [lambda: scaler.unscale_(opt), lambda: scaler.step(opt, closure=None)]:
            try:
                call()
            except RuntimeError as e:
                print("RuntimeError", e)
        scaler.step(opt)
        try:
            scaler.step(opt)
        except RuntimeError as e:
            print("RuntimeError", e)
        try:
            torch.amp.GradScaler("cpu").load_state_dict({})
        except RuntimeError as e:
            print("RuntimeError", e)
        off = torch.amp.GradScaler("cpu", enabled=False)
        print(off.is_enabled(), off.get_scale(), off.state_dict(), off.scale(torch.ones(1)))
    """,
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet(name):
    check_snippet(SNIPPETS[name])


def test_cpu_autocast_runs_matmuls_in_bfloat16():
    check_snippet("""
        x = torch.linspace(0, 1, 12).view(3, 4)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            print(torch.is_autocast_enabled("cpu"), nn.Linear(4, 2)(x).dtype, (x @ x.t()).dtype)
    """)
