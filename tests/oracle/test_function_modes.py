"""TorchFunctionMode: which calls a mode sees, nesting, results it replaces, as torch's."""

import importlib

import pytest

import ember

torch = pytest.importorskip("torch")


def _recorder(lib):
    overrides = importlib.import_module(lib.__name__ + ".overrides")

    class Recorder(overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    return Recorder


PROGRAMS = {
    "factories": lambda lib: (lib.zeros(3), lib.ones(2), lib.tensor([1.0]), lib.arange(3)),
    "functions_and_methods": lambda lib, x: (lib.add(x, 2), x.sum(), x.exp().mean()),
    "operators": lambda lib, x: (x + 1, 2 * x, x @ x),
    "functional_and_init": lambda lib, x: (
        lib.nn.functional.relu(x),
        lib.nn.init.normal_(lib.zeros(2)),
    ),
    "not_seen": lambda lib, x: (lib.manual_seed(0), lib.get_default_dtype(), lib.is_tensor(x)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_mode_sees_what_torch_sees(name):
    seen = {}
    for lib in (ember, torch):
        x = lib.ones(3)
        with _recorder(lib)() as mode:
            program = PROGRAMS[name]
            program(lib) if name == "factories" else program(lib, x)
        seen[lib.__name__] = mode.seen
    assert seen["ember"] == seen["torch"]


def _nesting(lib):
    Recorder = _recorder(lib)
    overrides = importlib.import_module(lib.__name__ + ".overrides")
    x = lib.ones(2)
    with Recorder() as outer:
        with Recorder() as inner:
            lib.add(x, 1)
            depth = len(overrides._get_current_function_mode_stack())
            current = overrides._get_current_function_mode() is inner
    return len(outer.seen), len(inner.seen), depth, current, overrides._get_current_function_mode()


def test_nested_modes_each_see_the_call_once():
    assert _nesting(ember) == _nesting(torch) == (1, 1, 2, True, None)


def _doubling(lib):
    overrides = importlib.import_module(lib.__name__ + ".overrides")

    class Double(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            return result * 2 if func.__name__ == "add" else result

    with Double():
        inside = (lib.ones(2) + 1).tolist(), lib.add(lib.ones(2), 1).tolist()
    return inside, (lib.ones(2) + 1).tolist()


def test_mode_result_replaces_the_call_and_ends_with_the_block():
    assert _doubling(ember) == _doubling(torch) == (([4.0, 4.0], [4.0, 4.0]), [2.0, 2.0])


def test_mode_skipping_init_leaves_parameters_uninitialized():
    # Lightning's _EmptyInit: nn.init functions return their tensor untouched
    class SkipInit(ember.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.made = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func.__name__ in ("kaiming_uniform_", "uniform_"):
                return args[0]
            result = func(*args, **(kwargs or {}))
            if func.__name__ == "empty":
                result.fill_(7.0)
                self.made.append(result)
            return result

    with SkipInit() as mode:
        layer = ember.nn.Linear(3, 3)
    assert len(mode.made) == 2
    assert (layer.weight == 7.0).all() and (layer.bias == 7.0).all()
    assert not (ember.nn.Linear(3, 3).weight == 7.0).all()


def test_disable_torch_function_turns_modes_off():
    Recorder = _recorder(ember)
    with Recorder() as mode:
        with ember._C.DisableTorchFunction():
            ember.add(ember.ones(1), 1)
        ember.add(ember.ones(1), 1)
    assert mode.seen == ["ones", "add"]


def test_mode_on_other_thread_is_not_seen():
    import threading

    Recorder = _recorder(ember)
    with Recorder() as mode:
        thread = threading.Thread(target=lambda: ember.add(ember.ones(1), 1))
        thread.start()
        thread.join()
    assert mode.seen == []
