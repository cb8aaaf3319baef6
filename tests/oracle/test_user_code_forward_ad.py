# ruff: noqa: E501  (user code quoted verbatim)
"""User code: the forward-mode AD tutorial (``torch.autograd.forward_ad``: dual tensors,
``unpack_dual`` tangents through functions, modules and ``functional_call``)."""

from __future__ import annotations

from tests.oracle._user_code import check_snippet


def test_forward_ad_tutorial():
    check_snippet("""
        import torch.autograd.forward_ad as fwAD
        primal = torch.linspace(-1, 1, 100).view(10, 10)
        tangent = torch.cos(torch.arange(100.)).view(10, 10)
        def fn(x, y):
            return x ** 2 + y ** 2
        with fwAD.dual_level():
            dual_input = fwAD.make_dual(primal, tangent)
            assert fwAD.unpack_dual(dual_input).tangent is tangent
            dual_input_alt = fwAD.make_dual(primal, tangent.T)
            assert fwAD.unpack_dual(dual_input_alt).tangent is not tangent
            plain_tensor = torch.sin(torch.arange(100.)).view(10, 10)
            dual_output = fn(dual_input, plain_tensor)
            jvp = fwAD.unpack_dual(dual_output).tangent
            print(jvp[0, :4], torch.allclose(jvp, 2 * primal * tangent))
            print(type(fwAD.unpack_dual(dual_output)).__name__, fwAD.unpack_dual(plain_tensor).tangent)
            print(fwAD.unpack_dual(dual_input * 0 + 1).tangent[0, :3])
        assert fwAD.unpack_dual(dual_output).tangent is None
        model = nn.Linear(5, 5)
        with torch.no_grad():
            model.weight.copy_(torch.linspace(-1, 1, 25).view(5, 5)); model.bias.fill_(0.1)
        input = torch.linspace(0, 1, 80).view(16, 5)
        params = {name: p for name, p in model.named_parameters()}
        tangents = {name: torch.ones_like(p) * 0.5 for name, p in params.items()}
        with fwAD.dual_level():
            for name, p in params.items():
                delattr(model, name)
                setattr(model, name, fwAD.make_dual(p, tangents[name]))
            out = model(input)
            jvp = fwAD.unpack_dual(out).tangent
        print(jvp[0].detach())
        from torch.func import functional_call
        model = nn.Linear(5, 5)
        dual_params = {}
        with fwAD.dual_level():
            for name, p in params.items():
                dual_params[name] = fwAD.make_dual(p, tangents[name])
            out = functional_call(model, dual_params, input)
            jvp = fwAD.unpack_dual(out).tangent
        print(jvp[1].detach())
        try:
            fwAD.make_dual(torch.ones(2), torch.ones(2))
        except RuntimeError as e:
            print("RuntimeError", e)
        with fwAD.dual_level():
            try:
                fwAD.make_dual(torch.ones(2), torch.ones(3))
            except RuntimeError as e:
                print("RuntimeError", e)
            try:
                with fwAD.dual_level():
                    pass
            except RuntimeError as e:
                print("RuntimeError", e)
            x = fwAD.make_dual(torch.tensor([0.5, 1.0]), torch.tensor([1.0, 0.0]))
            y = (x.sin() * x.exp()).sum()
            print(fwAD.unpack_dual(y).tangent, fwAD.unpack_dual(y).primal)
    """)


def test_tangents_end_with_the_level():
    check_snippet("""
        import torch.autograd.forward_ad as fwAD
        with fwAD.dual_level() as level:
            x = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))
            y = x * 3
            print(level, fwAD.unpack_dual(y).tangent)
        print(fwAD.unpack_dual(y).tangent, fwAD.unpack_dual(x).tangent)
        fwAD.enter_dual_level()
        z = fwAD.make_dual(torch.ones(2), torch.full((2,), 2.0))
        print(fwAD.unpack_dual(z.exp()).tangent)
        fwAD.exit_dual_level()
        print(fwAD.unpack_dual(z).tangent)
    """)


def test_tangent_through_a_parameter_stays_differentiable():
    check_snippet("""
        import torch.autograd.forward_ad as fwAD
        w = nn.Parameter(torch.tensor([1.0, 2.0]))
        with fwAD.dual_level():
            d = fwAD.make_dual(w, torch.tensor([1.0, 0.5]))
            t = fwAD.unpack_dual(d ** 2).tangent
        print(t.detach(), t.requires_grad)
    """)
