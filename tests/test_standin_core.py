"""Core behaviours that third-party libraries rely on, found running them under the stand-in
(tests/ecosystem/). Each asserts torch's behaviour, checked against torch 2.13."""

import ember


def test_builtin_node_has_no_saved_tensors():
    # torchviz's make_dot asks hasattr(fn, "saved_tensors"): False on torch's built-in nodes,
    # which show what they saved only as _saved_<arg>
    x = ember.randn(3, requires_grad=True)
    y = (x * x).mean()
    assert not hasattr(y.grad_fn, "saved_tensors")
    mul = y.grad_fn.next_functions[0][0]
    assert not hasattr(mul, "saved_tensors")
    assert ember.equal(mul._saved_self, x)
    y.backward()  # ember's own backward still reads them
    assert ember.allclose(x.grad, 2 * x / 3)
