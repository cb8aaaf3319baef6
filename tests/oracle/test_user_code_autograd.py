# ruff: noqa: E501  (user code quoted verbatim)
"""User code: the autograd mechanics notes and tutorials: saved tensors seen through
``grad_fn._saved_*``, node hooks, saved-tensor hooks, anomaly mode, grad modes, views and
in-place ops on the graph, ``Parameter``/``Variable``, ``autograd.functional``."""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet

SNIPPETS = {
    "inference_tensors_are_not_saved_for_backward": """
        with torch.inference_mode():
            x = torch.ones(3)
        w = torch.ones(3, requires_grad=True)
        print((w + x).sum())  # add saves nothing: fine
        try:
            (w * x).sum().backward()
        except RuntimeError as e:
            print("RuntimeError", e)
        try:
            (w * x[:2].sum()).sum()
        except RuntimeError as e:
            print("RuntimeError", e)
        print((w * x.clone()).sum())
        for update in (lambda: x.add_(1), lambda: x.__setitem__(0, 5.0), lambda: x[1:].zero_()):
            try:
                update()
            except RuntimeError as e:
                print("RuntimeError", e)
        # (torch has already written x[0] and x[1:] when it raises for them; ember writes nothing)
        with torch.inference_mode():
            y = torch.ones(2)
        with torch.inference_mode():
            y.add_(1)
        print(y, y.is_inference(), y.clone().is_inference())
    """,
    "saved_tensors_of_nodes": """
        x = torch.randn(5, requires_grad=True)
        y = x.pow(2)
        print(x.equal(y.grad_fn._saved_self))
        print(x is y.grad_fn._saved_self)
        y = x.exp()
        print(y.equal(y.grad_fn._saved_result))
        print(y is y.grad_fn._saved_result)
        z = x * 2
        print(z.grad_fn._saved_other, (x * x).grad_fn._saved_other is x)
        try:
            y.grad_fn._saved_foo
        except AttributeError as e:
            print("AttributeError", e)
        y.sum().backward()
        try:
            y.grad_fn._saved_result
        except RuntimeError as e:
            print("RuntimeError", str(e)[:60])
    """,
    "mechanics_tour": """
        a = torch.tensor([1., 2.], requires_grad=True)
        b = a.sin(); print(b.grad_fn.name(), b.grad_fn.next_functions, b.grad_fn.metadata)
        h = b.grad_fn.register_hook(
            lambda gi, go: print("hook", [g.shape for g in gi], [g.shape for g in go])
        )
        h2 = b.grad_fn.register_prehook(lambda go: print("prehook", len(go)))
        b.sum().backward(); h.remove(); h2.remove()
        print(a.grad)
        def pack_hook(x):
            print("Packing", x.shape)
            return x
        def unpack_hook(x):
            print("Unpacking", x.shape)
            return x
        a = torch.ones(5, requires_grad=True)
        b = torch.ones(5, requires_grad=True) * 2
        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            y = a * b
        y.sum().backward()
        with torch.autograd.graph.save_on_cpu(pin_memory=False):
            y = (a * (torch.ones(5, requires_grad=True) * 2)).sum()
        y.backward(); print(a.grad)
        t1 = torch.ones(2, requires_grad=True); t2 = torch.ones(2, requires_grad=True)
        x = torch.ones(3, requires_grad=True)
        out = x * 2
        unused = torch.ones(1, requires_grad=True)
        print(torch.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True,
                                  materialize_grads=True))
        x = torch.tensor(1.0, requires_grad=True)
        with torch.autograd.set_detect_anomaly(True):
            y = x * 2
            y.backward()
        print(x.grad, torch.is_anomaly_enabled())
        with torch.autograd.detect_anomaly(check_nan=True):
        z = torch.tensor([1.0 + 2j], requires_grad=True)
        (z.abs() ** 2).sum().backward(); print(z.grad)
        x = torch.tensor([2.0], requires_grad=True)
        with torch.enable_grad():
            y = x * 2
        with torch.no_grad():
            with torch.enable_grad():
                w = x * 3
        print(y.requires_grad, w.requires_grad)
        torch.set_grad_enabled(False); print((x * 2).requires_grad); torch.set_grad_enabled(True)
        a = torch.ones(2, 2, requires_grad=True)
        b = a[0]; c = b * 2
        print(b._base is a, b.is_leaf, b.grad_fn, c.grad_fn.next_functions[0][0])
        v = a.detach(); v.zero_(); print(a)
        d = torch.ones(2, requires_grad=True).clone(); d[0] = 5; print(d.grad_fn)
        e = torch.ones(3, requires_grad=True)
        f = e.clone(); f.add_(1); f.mul_(2); print(f.grad_fn, f._version)
        f.sum().backward(); print(e.grad)
        x = torch.ones(2, requires_grad=True)
        y = x * 2
        y.backward(torch.ones(2), retain_graph=True)
        y.backward(torch.ones(2), retain_graph=True)
        print(x.grad)
        x.grad = None
        with torch.no_grad():
            x.mul_(2)
        print(x, x.requires_grad, x.is_leaf)
        p = torch.nn.Parameter(torch.ones(2))
        print(p.requires_grad, p.is_leaf, repr(p), p.data, type(p.data).__name__)
        print(type(p.detach()).__name__, type(p * 1).__name__, type(p.clone()).__name__)
        print(torch.autograd.Variable(torch.ones(2), requires_grad=True))
        d = torch.ones(3, dtype=torch.double, requires_grad=True)
        print(torch.autograd.gradcheck(lambda t: (t ** 2).sum(), d))
        print(torch.autograd.functional.vjp(lambda t: t * 2, torch.ones(2), torch.ones(2)))
        print(torch.autograd.functional.jvp(lambda t: t ** 2, torch.ones(2), torch.ones(2)))
        print(torch.autograd.functional.hvp(lambda t: (t ** 3).sum(), torch.ones(2), torch.ones(2)))
    """,
    "inference_tensors": """
        x = torch.ones(2,3)
        with torch.inference_mode():
            v = x[0]; y = x * 2; z = torch.ones(2); w = y.view(6); x.add_(1)
            t = torch.tensor([1.]); a = torch.arange(3); s = x.sum(); c = torch.cat([x, x]); u = x.unbind(0)
            print(v.is_inference(), y.is_inference(), z.is_inference(), w.is_inference(), x.is_inference())
            print(t.is_inference(), a.is_inference(), s.is_inference(), c.is_inference(), u[0].is_inference())
            z.requires_grad_(); print(z.requires_grad)
            vals, idx = torch.ones(3).topk(2); print(vals.is_inference(), idx.is_inference())
        print(y.requires_grad)
        try: y.requires_grad = True
        except RuntimeError as e: print(e)
        try: y.requires_grad_()
        except RuntimeError as e: print(e)
        print((y * 2).is_inference(), y.clone().is_inference(), y[0].is_inference())
        with torch.no_grad():
            n = x * 2
        print(n.is_inference())
        with torch.inference_mode(False):
            q = x * 2
        print(q.is_inference())
        m = torch.nn.Linear(3, 2)
        with torch.inference_mode():
            out = m(torch.ones(4, 3))
        print(out.is_inference(), out.requires_grad, m.weight.is_inference())
        @torch.inference_mode()
        def predict(inp):
            return m(inp).softmax(-1)
        p = predict(torch.ones(1, 3)); print(p.is_inference(), p.requires_grad)
        with torch.inference_mode():
            with torch.inference_mode():
                k = x + 1
            k2 = x + 1
        k3 = x + 1
        print(k.is_inference(), k2.is_inference(), k3.is_inference())
    """,
    "hooks_in_place_threads": """
        import threading
        t = torch.tensor(1., requires_grad=True).sin()
        t.cos_()
        t.register_hook(lambda grad: print("hook1", grad))
        t.backward()
        t = torch.tensor(1., requires_grad=True).sin()
        t.register_hook(lambda grad: print("hook2 before inplace", grad))
        t.cos_()
        t.backward()
        a = torch.ones(2, requires_grad=True)
        b = a * 2
        b.register_hook(lambda g: print("b hook", g))
        b.retain_grad()
        c = b.sum()
        c.backward()
        print(b.grad)
        def train_fn():
            x = torch.ones(5, 5, requires_grad=True)
            y = (x + 3) * (x + 4) * 0.5
            y.sum().backward()
            res.append(x.grad.sum().item())
        res = []
        threads = [threading.Thread(target=train_fn) for _ in range(4)]
        for p in threads: p.start()
        for p in threads: p.join()
        print(res)
        x = torch.ones(2, requires_grad=True)
        y = x.exp()
        y.register_hook(lambda g: g * 10)
        y.sum().backward(); print(x.grad)
        z = torch.tensor([1.0, 2.0], requires_grad=True)
        h = z.register_hook(lambda g: None)
        (z * z).sum().backward(); print(z.grad)
        w = torch.ones(2, requires_grad=True)
        def halve(p):
            p.grad.mul_(0.5)
        w.register_post_accumulate_grad_hook(halve)
        (w * 4).sum().backward(); print(w.grad)
        try:
            torch.ones(2).register_hook(lambda g: g)
        except RuntimeError as e:
            print("RuntimeError", e)
        x = torch.randn(3, requires_grad=True)
        try:
            x.sum().backward(torch.ones(2))
        except RuntimeError as e:
            print("RuntimeError", e)
        v = torch.ones(2, requires_grad=True)
        v.register_post_accumulate_grad_hook(lambda p: p.grad)
        try:
            (v * 2).sum().backward()
        except RuntimeError as e:
            print("RuntimeError", e)
        u = torch.ones(2, requires_grad=True)
        u.register_post_accumulate_grad_hook(lambda p: 5)
        try:
            (u * 2).sum().backward()
        except TypeError as e:
            print("TypeError", e)
    """,
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet(name):
    check_snippet(SNIPPETS[name])


def test_inference_mode_observes_ops_only_inside_the_block():
    import ember
    from ember._ops import registry
    from ember._ops.inference import MARKER

    assert MARKER not in registry._OBSERVERS
    with ember.inference_mode():
        assert MARKER in registry._OBSERVERS
        try:
            with ember.inference_mode():
                raise ValueError
        except ValueError:
            pass
        assert MARKER in registry._OBSERVERS
    assert MARKER not in registry._OBSERVERS
