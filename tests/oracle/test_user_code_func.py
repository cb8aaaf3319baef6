# ruff: noqa: E501  (user code quoted verbatim)
"""User code: ``torch.func`` transforms (``vmap``, ``grad``, ``jacrev``, ``hessian``, ``vjp``,
``jvp``, ``stack_module_state``) as the per-sample-gradients, Jacobians/Hessians and model
ensembling tutorials use them."""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet
from tests.oracle.helper import check, rand

SNIPPETS = {
    "vmap_basics": """
        from_ = torch.func
        x = torch.linspace(-1, 1, 12).reshape(3, 4)
        print(from_.vmap(torch.sum)(x), from_.vmap(lambda a: a * 2, in_dims=1)(x).shape)
        print(from_.vmap(lambda a, b: a @ b, in_dims=(0, None))(x, torch.ones(4)))
        print(from_.vmap(lambda a: (a, a.sum()))(x)[1], torch.vmap(torch.outer)(x, x).shape)
        print(from_.vmap(lambda d: d["a"] + 1)({"a": x}).shape)
        print(from_.vmap(lambda a: a.sum(0), in_dims=1, out_dims=0)(torch.ones(2, 3, 4)).shape)
        print(from_.vmap(from_.vmap(lambda a: a.sum()))(torch.ones(2, 3, 4)).shape)
        print(from_.vmap(lambda a: a.t(), out_dims=2)(torch.ones(5, 2, 3)).shape)
        print(torch.vmap is torch.func.vmap)
    """,
    "vmap_errors": """
        x = torch.ones(3, 4)
        try:
            torch.vmap(lambda a, b: a + b)(x, torch.ones(4, 4))
        except ValueError as e:
            print("ValueError", e)
        try:
            torch.vmap(lambda a: 1.0)(x)
        except ValueError as e:
            print("ValueError", e)
    """,
    "grad_basics": """
        from torch.func import grad, grad_and_value
        x = torch.linspace(-1, 1, 12).reshape(3, 4)
        g = grad(lambda a: (a ** 2).sum())(x)
        print(g, g.requires_grad, g.grad_fn)
        print(grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, 2 * x)[1])
        print(grad(lambda a: ((a ** 2).sum(), a.max()), has_aux=True)(x)[1])
        print(grad_and_value(lambda a: (a ** 2).sum())(torch.tensor([1.0, 2.0])))
        print(grad(grad(lambda a: a ** 3))(torch.tensor(2.0)))
        print(grad(lambda p: (p["w"] * p["b"]).sum())({"w": torch.ones(2), "b": x[0, :2]}))
        try:
            grad(lambda a: a * 2)(x)
        except RuntimeError as e:
            print("RuntimeError", e)
    """,
    "jacobians_and_products": """
        from torch.func import hessian, jacfwd, jacrev, jvp, vjp
        x = torch.tensor([0.0, 1.0, 2.0])
        print(jacrev(torch.sin)(x), jacfwd(torch.sin)(x))
        print(hessian(lambda a: (a ** 3).sum())(x))
        out, fn = vjp(torch.sin, x)
        print(out, fn(torch.ones(3)))
        print(jvp(torch.sin, (x,), (torch.ones(3),)))
        print(jacrev(lambda a, b: a * b, argnums=(0, 1))(x, x + 1))
    """,
    "jacobians_tutorial": """
        from torch.func import hessian, jacrev, vmap
        D = 4
        weight = torch.sin(torch.arange(D * D, dtype=torch.float32)).reshape(D, D)
        bias = torch.cos(torch.arange(D, dtype=torch.float32))
        x = torch.linspace(0, 1, D)
        def predict(weight, bias, x):
            return F.linear(x, weight, bias).tanh()
        print(jacrev(predict, argnums=2)(weight, bias, x))
        batched = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
        print(batched(weight, bias, x.repeat(2, 1)).shape)
        jw, jb = jacrev(predict, argnums=(0, 1))(weight, bias, x)
        print(jw.shape, jb)
        print(hessian(predict, argnums=2)(weight, bias, x).shape)
    """,
    "per_sample_grads_tutorial": """
        from torch.func import functional_call, grad, vmap
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(8, 5)
                self.fc2 = nn.Linear(5, 3)
            def forward(self, x):
                return F.log_softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)
        model = Net()
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) + i).view(p.shape))
        data = torch.cos(torch.arange(48.0)).reshape(6, 8)
        targets = torch.tensor([0, 1, 2, 0, 1, 2])
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}
        def compute_loss(params, buffers, sample, target):
            predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return F.nll_loss(predictions, target.unsqueeze(0))
        per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(
            params, buffers, data, targets)
        for k, g in per_sample.items():
            print(k, g.shape)
        loop = [torch.autograd.grad(F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]),
                                    list(model.parameters())) for i in range(6)]
        for stacked, g in zip(map(torch.stack, zip(*loop)), per_sample.values()):
            print(torch.allclose(stacked, g, atol=1e-6))
        print(per_sample["fc2.bias"])
    """,
    "model_ensembling_tutorial": """
        import copy
        from torch.func import functional_call, stack_module_state, vmap
        models = [nn.Linear(4, 2) for _ in range(3)]
        for k, m in enumerate(models):
            with torch.no_grad():
                m.weight.fill_(k)
                m.bias.fill_(-k)
        params, buffers = stack_module_state(models)
        print({k: (v.shape, v.requires_grad, v.is_leaf) for k, v in params.items()}, buffers)
        base = copy.deepcopy(models[0])
        def fmodel(params, buffers, x):
            return functional_call(base, (params, buffers), (x,))
        x = torch.arange(8.0).reshape(2, 4)
        print(vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x).detach())  # (grad_fn differs)
        print(vmap(fmodel)(params, buffers, x.expand(3, 2, 4)).shape)
    """,
    "transforms_compose": """
        from torch.func import vmap, grad, jacrev, hessian, vjp, jvp
        x = torch.linspace(-1, 1, 6).view(2, 3)
        print(vmap(lambda a, scale=1.0: a * scale)(x, scale=2.0))
        print(vmap(lambda a: a.sum())(x), vmap(torch.dot)(x, x))
        print(vmap(lambda a: a, in_dims=0, out_dims=1)(x).shape)
        print(vmap(lambda a, b: a + b, in_dims=(None, 0))(torch.ones(3), x))
        print(vmap(lambda t: (t[0], t[1]), in_dims=((0, 0),))((x, x))[1].shape)
        print(vmap(lambda a: torch.nn.functional.linear(a, torch.eye(3)))(x))
        print(vmap(lambda a: a.unsqueeze(0) @ a.unsqueeze(1))(x).shape)
        print(vmap(vmap(torch.mul, in_dims=(0, None)), in_dims=(0, None))(torch.ones(2, 3), torch.tensor(2.)).shape)
        def f(x):
            return x.sin().sum()
        print(grad(grad(f))(torch.tensor(0.5)), vmap(grad(f))(x))
        print(jacrev(jacrev(f))(torch.tensor([0.1, 0.2])))
        print(hessian(f)(torch.tensor([0.1, 0.2])))
        print(jacrev(f, has_aux=False)(torch.tensor([0.0, 1.0])))
        print(jacrev(lambda a: (a.sin(), a.sum()), has_aux=True)(torch.tensor([0.0, 1.0])))
        print(vjp(lambda a, b: a * b, torch.ones(2), torch.full((2,), 3.0))[1](torch.ones(2)))
        print(jvp(lambda a, b: a * b, (torch.ones(2), torch.full((2,), 3.0)), (torch.ones(2), torch.zeros(2))))
        model = torch.nn.Linear(3, 1)
        with torch.no_grad():
            model.weight.fill_(0.5); model.bias.fill_(0.1)
        from torch.func import functional_call
        params = dict(model.named_parameters())
        def loss(p, xb):
            return functional_call(model, p, (xb,)).pow(2).mean()
        g = grad(loss)(params, x)
        print({k: v for k, v in g.items()})
        print(grad(loss, argnums=1)(params, x))
        try:
            vmap(lambda a: a)(torch.tensor(1.0))
        except ValueError as e:
            print("ValueError", e)
        try:
            vmap(lambda a: a, in_dims=2)(x)
        except ValueError as e:
            print("ValueError", e)
    """,
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet(name):
    check_snippet(SNIPPETS[name])


@pytest.mark.parametrize(
    "fn, shapes",
    [
        (lambda lib, x, y: lib.vmap(lib.mul)(x, y), [(3, 4), (3, 4)]),
        (lambda lib, x, y: lib.vmap(lambda a, b: a @ b, in_dims=(1, None))(x, y), [(4, 3), (4,)]),
        (lambda lib, x: lib.vmap(lambda r: r.softmax(0), out_dims=1)(x), [(3, 5)]),
    ],
)
def test_vmap_values_and_grads(fn, shapes):
    # vmap's graph is ember's own (a stack of per-slice ops), so grad_fn names may differ
    check(fn, [rand(*s) for s in shapes], grad_fn=False, strides=False)


def test_grad_of_grad_is_differentiable_through_outer_graph():
    def f(lib, x):
        g = lib.func.grad(lambda a: (a.sin() * a).sum())(x)
        return g * x

    check(f, [rand(5, dtype="float64")], grad_fn=False)
