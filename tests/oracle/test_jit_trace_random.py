"""Random factories in traces against torch's: the printed node, the check's TracerWarnings
(nondeterministic nodes, outputs that differ), fresh numbers at each call following
``manual_seed``; and the check's ``TracingCheckError`` when two traces' graphs differ."""

import io
import re
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _lib(x):
    return torch if isinstance(x, torch.Tensor) else ember


def f_rand(x):
    return x + _lib(x).rand(2, 3)


def f_rand_shape(x):
    return x + _lib(x).rand(x.shape)


def f_randn_double(x):
    return x + _lib(x).randn((2, 3), dtype=_lib(x).float64)


def f_like(x):
    lib = _lib(x)
    return lib.rand_like(x) + lib.randn_like(x, dtype=lib.float64)


def f_randint(x):
    lib = _lib(x)
    return x + lib.randint(0, 5, (2, 3)) + lib.randint(7, (2, 3))


def f_dropout(x):
    return _lib(x).nn.functional.dropout(x, 0.5, True)


def f_bernoulli(x):
    return _lib(x).bernoulli(x)


def f_uniform(x):
    return x.clone().uniform_()


RANDOM = [f_rand, f_rand_shape, f_randn_double, f_like, f_randint, f_dropout, f_bernoulli,
          f_uniform]  # fmt: skip
# graphs ember prints otherwise (none left: sizes' prim::NumToTensor/aten::Int carry no source
# range, bernoulli and uniform_ their trailing generator constants, as torch's)
INEXACT = ()


def _trace(lib, fn, check_trace=True):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = lib.jit.trace(fn, (lib.ones(2, 3) * 0.5,), check_trace=check_trace)
    tracer = [str(w.message) for w in caught if w.category.__name__ == "TracerWarning"]
    return traced, tracer


def _kinds(graph) -> list:
    return [n.kind() for n in graph.nodes() if n.kind() != "prim::Constant"]


def _strip(text: str) -> str:
    """Without source ranges (torch's name its library files for the dropout)."""
    return re.sub(r" # [^\n]*", "", text)


@pytest.mark.parametrize("fn", RANDOM, ids=lambda f: f.__name__)
def test_random_node_and_check_warnings_as_torch(fn):
    ours, our_warnings = _trace(ember, fn)
    theirs, their_warnings = _trace(torch, fn)
    if fn in INEXACT:
        assert _kinds(ours.graph) == _kinds(theirs.graph)
    elif fn is not f_dropout:
        assert str(ours.graph) == str(theirs.graph)
    if fn not in INEXACT:
        assert _strip(str(ours.graph)) == _strip(str(theirs.graph))
    # the check warns (it does not raise): the nondeterministic nodes, then each output
    assert len(our_warnings) == len(their_warnings) == 2
    if fn not in INEXACT:
        assert _strip(our_warnings[0]) == _strip(their_warnings[0])
    assert our_warnings[0].startswith("Trace had nondeterministic nodes. Did you forget")
    for a, b in zip(our_warnings[1:], their_warnings[1:]):
        assert a.splitlines()[:2] == b.splitlines()[:2]


@pytest.mark.parametrize(
    "fn", [f_rand_shape, f_like, f_randint, f_dropout], ids=lambda f: f.__name__
)
def test_traced_function_draws_fresh_numbers_as_torch(fn):
    results = {}
    for lib in (ember, torch):
        traced, _ = _trace(lib, fn, check_trace=False)
        x = lib.ones(2, 3) * 0.5
        lib.manual_seed(0)
        a, b = traced(x), traced(x)
        lib.manual_seed(0)
        c = traced(x)
        assert not bool((a == b).all())  # fresh numbers at each call
        assert bool((a == c).all())  # ... following manual_seed
        results[lib.__name__] = a.tolist()
    assert results["ember"] == results["torch"]  # the same numbers as torch's trace draws


_CALLS = {"ember": 0, "torch": 0}  # the state that makes two traces differ


def _count(x) -> int:
    name = _lib(x).__name__
    _CALLS[name] += 1
    return _CALLS[name]


def f_counter(x):
    return x * _count(x)


def f_counter_tensor(x):
    return x + _lib(x).tensor([float(_count(x)), 2.0])


@pytest.mark.parametrize("fn", [f_counter, f_counter_tensor], ids=lambda f: f.__name__)
def test_graphs_differed_across_invocations_as_torch(fn):
    messages, outputs = [], []
    _CALLS.update(ember=0, torch=0)
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(Exception) as info:
                lib.jit.trace(fn, (lib.ones(2),))
        assert type(info.value).__name__ == "TracingCheckError"
        messages.append(str(info.value))
        outputs.append([str(w.message).splitlines()[:2] for w in caught
                        if str(w.message).startswith("Output nr")])  # fmt: skip
    ours, theirs = messages
    assert isinstance(ours, str) and ours.startswith(
        "Tracing failed sanity checks!\nERROR: Graphs differed across invocations!\n\tGraph diff:"
    )
    # the graph diff and the diverging node, up to the source locations (torch's are stacks)
    # (torch records ``tensor(...)`` as a constant then ``aten::to``/``aten::detach``, ember
    # as the constant alone: there only the diverging node is compared)
    head = [m.split("\tTrace source location:")[0] for m in messages]
    if fn is f_counter:
        assert head[0] == head[1]
    node_diffs = [h.split("First diverging operator:")[1] for h in head]
    assert node_diffs[0] == node_diffs[1] and "Node diff:" in node_diffs[0]
    assert ours.splitlines()[:3] == theirs.splitlines()[:3]
    marker = "ERROR: Tensor-valued Constant nodes differed in value across invocations."
    assert (marker in ours) == (marker in theirs)
    assert outputs[0] == outputs[1] and outputs[0]  # the output mismatch warned first


class Noisy(ember.nn.Module):
    def forward(self, x):
        return self.drop(x) + ember.rand(2, 3)

    def __init__(self):
        super().__init__()
        self.drop = ember.nn.Dropout(0.5)


class TorchNoisy(torch.nn.Module):
    def forward(self, x):
        return self.drop(x) + torch.rand(2, 3)

    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)


@pytest.mark.parametrize("train", [True, False])
def test_module_trace_warns_as_torch(train):
    # the forward's graph holds the rand; the dropout is in the child's method (torch lists
    # only the forward's nodes)
    _, ours = _trace(ember, Noisy().train(train))
    _, theirs = _trace(torch, TorchNoisy().train(train))
    assert _strip(ours[0]) == _strip(theirs[0])
    assert ours[0].startswith("Trace had nondeterministic nodes.") and "aten::rand(" in ours[0]
    assert len(ours) == len(theirs)


class Sampler(torch.nn.Module):
    def forward(self, x):
        lib = _lib(x)
        return x + lib.rand(2, 3) + lib.randn_like(x)


def test_onnx_export_of_random_nodes_as_torch():
    onnx = pytest.importorskip("onnx")
    kinds = []
    for lib, model in ((torch, Sampler()), (ember, Sampler())):
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if lib is torch:
                lib.onnx.export(model, (lib.ones(2, 3),), buf, dynamo=False)
            else:
                lib.onnx.export(_EmberSampler(), (lib.ones(2, 3),), buf)
        m = onnx.load_from_string(buf.getvalue())
        kinds.append([(n.op_type, sorted((a.name, str(onnx.helper.get_attribute_value(a)))
                                         for a in n.attribute)) for n in m.graph.node])  # fmt: skip
    assert kinds[0] == kinds[1]
    assert kinds[0][0][0] == "RandomUniform"


class _EmberSampler(ember.nn.Module):
    def forward(self, x):
        return x + ember.rand(2, 3) + ember.randn_like(x)


def f_empty_normal(x):
    return x + _lib(x).empty(2, 3).normal_()


def f_zeros_uniform(x):
    return x + _lib(x).zeros(2, 3).uniform_()


@pytest.mark.parametrize("fn", [f_empty_normal, f_zeros_uniform])
def test_check_accepts_a_factory_filled_in_place(fn):
    # torch records aten::empty + aten::normal_: its check warns (nondeterministic nodes, the
    # outputs differ) and traces; ember records the filled tensor as a constant, whose value
    # the check must not compare across the two traces
    heads = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            traced = lib.jit.trace(fn, (lib.ones(2, 3),))
        heads.append(
            [
                str(w.message).splitlines()[0]
                for w in got
                if "TracerWarning" in type(w.message).__name__
            ]
        )
        assert traced(lib.ones(2, 3)).shape == (2, 3)
    assert heads[1] == heads[0]
