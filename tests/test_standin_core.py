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


def test_storage_sizeof_counts_its_bytes():
    import sys

    small = sys.getsizeof(ember.empty(0).untyped_storage())
    big = sys.getsizeof(ember.randn(1, 1, 28, 28).untyped_storage())
    assert big - small == 28 * 28 * 4
