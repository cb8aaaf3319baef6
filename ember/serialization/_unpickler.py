"""Unpicklers for ``data.pkl``: the restricted one behind ``weights_only=True``, and the full one.

The restricted unpickler interprets the pickle opcodes itself, as torch's
``_weights_only_unpickler`` does, rather than trusting ``pickle.Unpickler``: a global is looked
up in a table of allowed names (never imported), only allowed functions are called (REDUCE),
only allowed classes instantiated (NEWOBJ), BUILD only sets the attributes of an ``OrderedDict``
or of an allowlisted class, items go only into lists, dicts and sets, and the only persistent
ids are storages. Nothing else in the file can run code. It reads from a bytes-like buffer
(``bytes`` or an ``mmap``) and never believes a length it has not checked against the buffer.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import importlib
import pickle
import struct
from collections import Counter, OrderedDict
from pickle import UnpicklingError

from ember.serialization import _rebuild as R

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")

# user additions: add_safe_globals / safe_globals
_user_safe: set = set()


def user_allowed() -> dict[str, object]:
    """Return the user's safe globals keyed by ``module.qualname`` (or the name they gave)."""
    rc = {}
    for f in _user_safe:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(
                    "Expected tuple of length 2 (global, str of callable full path), but got "
                    f"tuple of length: {len(f)}"
                )
            if type(f[1]) is not str:
                raise TypeError(
                    "Expected second item in tuple to be str of callable full path, but got: "
                    f"{type(f[1])}"
                )
            rc[f[1]] = f[0]
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


def map_name(module: str, name: str) -> tuple[str, str]:
    """Apply Python 2 -> 3 renames (``__builtin__`` -> ``builtins``), as pickle and torch do."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def not_allowed_message(full_path: str) -> str:
    if full_path.startswith("builtins."):
        full_path = full_path[len("builtins.") :]
    return (
        f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. "
        f"Please use `torch.serialization.add_safe_globals([{full_path}])` or the "
        f"`torch.serialization.safe_globals([{full_path}])` context manager to allowlist this "
        "global if you trust this class/function."
    )


def resolve_global(module: str, name: str, user: dict):
    """Return the object an allowed global name stands for, or raise UnpicklingError."""
    module, name = map_name(module, name)
    full_path = f"{module}.{name}"
    if module.split(".", 1)[0] in _BLOCKED_MODULES:
        raise UnpicklingError(
            f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked."
        )
    obj = R.ALLOWED.get(full_path)
    if obj is not None:
        return obj
    if full_path in user:
        return user[full_path]
    raise UnpicklingError(not_allowed_message(full_path))


class WeightsUnpickler:
    """Load one pickle from ``data[pos:]`` allowing only what a checkpoint needs."""

    def __init__(self, data, pos: int = 0, *, persistent_load, encoding: str = "utf-8"):
        self.data = data
        self.pos = pos
        self.end = len(data)
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.user = user_allowed()
        self.user_ids = {id(v) for v in self.user.values()}
        self.memo: dict = {}

    # ---------------------------------------------------------------------- reading
    def _take(self, n: int) -> bytes:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise UnpicklingError("pickle data was truncated")
        self.pos = pos + n
        return self.data[pos : pos + n]

    def _line(self) -> bytes:
        i = self.data.find(b"\n", self.pos)
        if i < 0:
            raise UnpicklingError("pickle data was truncated")
        line = self.data[self.pos : i]
        self.pos = i + 1
        return line

    def _u8(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise UnpicklingError("pickle data was truncated")
        self.pos = pos + 1
        return self.data[pos]

    def _unpack(self, fmt: struct.Struct):
        pos = self.pos
        if pos + fmt.size > self.end:
            raise UnpicklingError("pickle data was truncated")
        self.pos = pos + fmt.size
        return fmt.unpack_from(self.data, pos)[0]

    # ---------------------------------------------------------------------- main loop
    def load(self):
        """Return ``(object, position after the STOP opcode)``."""
        self.stack: list = []
        self.metastack: list = []
        dispatch = self._dispatch
        data, end = self.data, self.end
        try:
            while True:
                pos = self.pos
                if pos >= end:
                    raise UnpicklingError("pickle data was truncated")
                self.pos = pos + 1
                handler = dispatch.get(data[pos])
                if handler is None:
                    op = data[pos]
                    raise UnpicklingError(
                        f"Unsupported operand {op} ({bytes([op])!r}) at byte {pos}"
                    )
                if handler(self):
                    return self.stack.pop(), self.pos
        except (
            IndexError,
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            OverflowError,
            struct.error,
        ) as e:
            raise UnpicklingError(
                f"corrupt pickle data near byte {self.pos}: {type(e).__name__}: {e}"
            ) from None

    def _pop_mark(self) -> list:
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    # ---------------------------------------------------------------------- opcodes
    def _proto(self):
        proto = self._u8()
        if proto > pickle.HIGHEST_PROTOCOL:
            raise UnpicklingError(f"unsupported pickle protocol: {proto}")

    def _frame(self):
        self._take(8)

    def _stop(self):
        return True

    def _mark(self):
        self.metastack.append(self.stack)
        self.stack = []

    def _pop(self):
        if self.stack:
            self.stack.pop()
        else:
            self._pop_mark()

    def _pop_mark_op(self):
        self._pop_mark()

    def _dup(self):
        self.stack.append(self.stack[-1])

    def _none(self):
        self.stack.append(None)

    def _true(self):
        self.stack.append(True)

    def _false(self):
        self.stack.append(False)

    def _binint(self):
        self.stack.append(self._unpack(_I4))

    def _binint1(self):
        self.stack.append(self._u8())

    def _binint2(self):
        self.stack.append(self._unpack(_U2))

    def _long1(self):
        n = self._u8()
        self.stack.append(int.from_bytes(self._take(n), "little", signed=True))

    def _long4(self):
        n = self._unpack(_I4)
        self.stack.append(int.from_bytes(self._take(n), "little", signed=True))

    def _int(self):
        line = self._line()
        if line == b"00":
            self.stack.append(False)
        elif line == b"01":
            self.stack.append(True)
        else:
            self.stack.append(int(line))

    def _long(self):
        line = self._line()
        self.stack.append(int(line[:-1] if line.endswith(b"L") else line))

    def _float(self):
        self.stack.append(float(self._line()))

    def _binfloat(self):
        self.stack.append(self._unpack(_F8))

    def _unicode_n(self, n: int):
        self.stack.append(str(self._take(n), "utf-8", "surrogatepass"))

    def _binunicode(self):
        self._unicode_n(self._unpack(_U4))

    def _short_binunicode(self):
        self._unicode_n(self._u8())

    def _binunicode8(self):
        self._unicode_n(self._unpack(_U8))

    def _unicode(self):
        self.stack.append(str(self._line(), "raw-unicode-escape"))

    def _bytes_n(self, n: int):
        self.stack.append(bytes(self._take(n)))

    def _binbytes(self):
        self._bytes_n(self._unpack(_U4))

    def _short_binbytes(self):
        self._bytes_n(self._u8())

    def _binbytes8(self):
        self._bytes_n(self._unpack(_U8))

    def _bytearray8(self):
        self.stack.append(bytearray(self._take(self._unpack(_U8))))

    def _string_n(self, n: int):
        data = bytes(self._take(n))
        self.stack.append(data if self.encoding == "bytes" else data.decode(self.encoding))

    def _short_binstring(self):
        self._string_n(self._u8())

    def _binstring(self):
        self._string_n(self._unpack(_I4))

    def _string(self):
        data = self._line().rstrip()
        if len(data) < 2 or data[0] != data[-1] or data[:1] not in (b'"', b"'"):
            raise UnpicklingError("the STRING opcode argument must be quoted")
        data = codecs.escape_decode(data[1:-1])[0]
        self.stack.append(data if self.encoding == "bytes" else data.decode(self.encoding))

    def _empty_tuple(self):
        self.stack.append(())

    def _tuple(self):
        items = self._pop_mark()
        self.stack.append(tuple(items))

    def _tuple1(self):
        self.stack[-1] = (self.stack[-1],)

    def _tuple2(self):
        s = self.stack
        s[-2:] = [(s[-2], s[-1])]

    def _tuple3(self):
        s = self.stack
        s[-3:] = [(s[-3], s[-2], s[-1])]

    def _empty_list(self):
        self.stack.append([])

    def _list(self):
        items = self._pop_mark()
        self.stack.append(items)

    def _empty_dict(self):
        self.stack.append({})

    def _dict(self):
        items = self._pop_mark()
        self.stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})

    def _empty_set(self):
        self.stack.append(set())

    def _frozenset(self):
        items = self._pop_mark()
        self.stack.append(frozenset(items))

    def _append(self):
        item = self.stack.pop()
        target = self.stack[-1]
        if type(target) is not list:
            raise UnpicklingError(f"Can only append to lists, but got {type(target)}")
        target.append(item)

    def _appends(self):
        items = self._pop_mark()
        target = self.stack[-1]
        if type(target) is not list:
            raise UnpicklingError(f"Can only extend lists, but got {type(target)}")
        target.extend(items)

    def _dict_target(self, opcode: str):
        target = self.stack[-1]
        if type(target) not in (dict, OrderedDict, Counter):
            raise UnpicklingError(
                f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, "
                f"but got {type(target)}"
            )
        return target

    def _setitem(self):
        v = self.stack.pop()
        k = self.stack.pop()
        self._dict_target("SETITEM")[k] = v

    def _setitems(self):
        items = self._pop_mark()
        target = self._dict_target("SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _additems(self):
        items = self._pop_mark()
        target = self.stack[-1]
        if type(target) is not set:
            raise UnpicklingError(f"Can only add items to sets, but got {type(target)}")
        target.update(items)

    def _binget(self):
        self.stack.append(self.memo[self._u8()])

    def _long_binget(self):
        self.stack.append(self.memo[self._unpack(_U4)])

    def _get(self):
        self.stack.append(self.memo[int(self._line())])

    def _binput(self):
        self.memo[self._u8()] = self.stack[-1]

    def _long_binput(self):
        self.memo[self._unpack(_U4)] = self.stack[-1]

    def _put(self):
        self.memo[int(self._line())] = self.stack[-1]

    def _memoize(self):
        self.memo[len(self.memo)] = self.stack[-1]

    # ---------------------------------------------------------------------- the risky ones
    def _global(self):
        module = self._line().decode("utf-8")
        name = self._line().decode("utf-8")
        self.stack.append(resolve_global(module, name, self.user))

    def _stack_global(self):
        name = self.stack.pop()
        module = self.stack.pop()
        if type(name) is not str or type(module) is not str:
            raise UnpicklingError("STACK_GLOBAL requires str")
        self.stack.append(resolve_global(module, name, self.user))

    def _reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if id(func) not in R.CALLABLE and id(func) not in self.user_ids:
            raise UnpicklingError(f"Trying to call reduce for unrecognized function {func!r}")
        if type(args) is not tuple:
            raise UnpicklingError("REDUCE arguments must be a tuple")
        self.stack[-1] = func(*args)

    def _newobj(self):
        args = self.stack.pop()
        self.stack[-1] = self._new(self.stack[-1], args, {})

    def _newobj_ex(self):
        kwargs = self.stack.pop()
        args = self.stack.pop()
        if type(kwargs) is not dict:
            raise UnpicklingError("NEWOBJ_EX keyword arguments must be a dict")
        self.stack[-1] = self._new(self.stack[-1], args, kwargs)

    def _new(self, cls, args, kwargs):
        if type(args) is not tuple:
            raise UnpicklingError("NEWOBJ arguments must be a tuple")
        if cls is R.make_parameter:
            return R.make_parameter(*args, **kwargs)
        if id(cls) in R.NEWOBJ_CLASSES or (id(cls) in self.user_ids and isinstance(cls, type)):
            return cls.__new__(cls, *args, **kwargs)
        raise UnpicklingError(
            "Can only create new object for nn.Parameter or classes allowlisted via "
            f"`add_safe_globals` but got {cls!r}"
        )

    def _build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        cls = type(inst)
        if cls is OrderedDict:
            if not isinstance(state, dict):
                raise UnpicklingError("BUILD state of an OrderedDict must be a dict")
            inst.__dict__.update(state)
        elif id(cls) in self.user_ids:
            setstate = getattr(cls, "__setstate__", None)
            if setstate is not None:
                setstate(inst, state)
                return
            state, slotstate = R.split_state(state)
            if state:
                inst.__dict__.update(state)
            if slotstate:
                for k, v in slotstate.items():
                    setattr(inst, k, v)
        else:
            raise UnpicklingError(
                "Can only build OrderedDict or types allowlisted via `add_safe_globals`, but got "
                f"{cls}"
            )

    def _binpersid(self):
        pid = self.stack.pop()
        if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
            raise UnpicklingError(
                f"Only persistent_load of storage is allowed, but got {type(pid).__name__}"
            )
        self.stack.append(self.persistent_load(pid))

    _dispatch = {
        pickle.PROTO[0]: _proto,
        pickle.FRAME[0]: _frame,
        pickle.STOP[0]: _stop,
        pickle.MARK[0]: _mark,
        pickle.POP[0]: _pop,
        pickle.POP_MARK[0]: _pop_mark_op,
        pickle.DUP[0]: _dup,
        pickle.NONE[0]: _none,
        pickle.NEWTRUE[0]: _true,
        pickle.NEWFALSE[0]: _false,
        pickle.BININT[0]: _binint,
        pickle.BININT1[0]: _binint1,
        pickle.BININT2[0]: _binint2,
        pickle.LONG1[0]: _long1,
        pickle.LONG4[0]: _long4,
        pickle.INT[0]: _int,
        pickle.LONG[0]: _long,
        pickle.FLOAT[0]: _float,
        pickle.BINFLOAT[0]: _binfloat,
        pickle.BINUNICODE[0]: _binunicode,
        pickle.SHORT_BINUNICODE[0]: _short_binunicode,
        pickle.BINUNICODE8[0]: _binunicode8,
        pickle.UNICODE[0]: _unicode,
        pickle.BINBYTES[0]: _binbytes,
        pickle.SHORT_BINBYTES[0]: _short_binbytes,
        pickle.BINBYTES8[0]: _binbytes8,
        pickle.BYTEARRAY8[0]: _bytearray8,
        pickle.SHORT_BINSTRING[0]: _short_binstring,
        pickle.BINSTRING[0]: _binstring,
        pickle.STRING[0]: _string,
        pickle.EMPTY_TUPLE[0]: _empty_tuple,
        pickle.TUPLE[0]: _tuple,
        pickle.TUPLE1[0]: _tuple1,
        pickle.TUPLE2[0]: _tuple2,
        pickle.TUPLE3[0]: _tuple3,
        pickle.EMPTY_LIST[0]: _empty_list,
        pickle.LIST[0]: _list,
        pickle.EMPTY_DICT[0]: _empty_dict,
        pickle.DICT[0]: _dict,
        pickle.EMPTY_SET[0]: _empty_set,
        pickle.FROZENSET[0]: _frozenset,
        pickle.APPEND[0]: _append,
        pickle.APPENDS[0]: _appends,
        pickle.SETITEM[0]: _setitem,
        pickle.SETITEMS[0]: _setitems,
        pickle.ADDITEMS[0]: _additems,
        pickle.BINGET[0]: _binget,
        pickle.LONG_BINGET[0]: _long_binget,
        pickle.GET[0]: _get,
        pickle.BINPUT[0]: _binput,
        pickle.LONG_BINPUT[0]: _long_binput,
        pickle.PUT[0]: _put,
        pickle.MEMOIZE[0]: _memoize,
        pickle.GLOBAL[0]: _global,
        pickle.STACK_GLOBAL[0]: _stack_global,
        pickle.REDUCE[0]: _reduce,
        pickle.NEWOBJ[0]: _newobj,
        pickle.NEWOBJ_EX[0]: _newobj_ex,
        pickle.BUILD[0]: _build,
        pickle.BINPERSID[0]: _binpersid,
    }


_I4 = struct.Struct("<i")
_U2 = struct.Struct("<H")
_U4 = struct.Struct("<I")
_U8 = struct.Struct("<Q")
_F8 = struct.Struct(">d")


def globals_in_pickle(data: bytes) -> set[str]:
    """Return the ``module.name`` of every GLOBAL / STACK_GLOBAL in a pickle (statically)."""
    import pickletools

    found = set()
    strings: list = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name == "GLOBAL":
                module, name = arg.split(" ", 1)
                module, name = map_name(module, name)
                found.add(f"{module}.{name}")
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                module, name = map_name(strings[-2], strings[-1])
                found.add(f"{module}.{name}")
            elif isinstance(arg, str) and "UNICODE" in opcode.name:
                strings.append(arg)
    except (ValueError, UnicodeDecodeError) as e:
        raise UnpicklingError(f"corrupt pickle data: {e}") from None
    return found


class TorchNames:
    """Unpickler mixin for ``weights_only=False``: any global is imported, torch's names map to
    ember's first (``torch._utils._rebuild_tensor_v2``, then ``torch.x.y`` -> ``ember.x.y``)."""

    _ember_persistent_load = None  # set by the loader

    def persistent_load(self, pid):
        return self._ember_persistent_load(pid)

    def find_class(self, module, name):
        module, name = map_name(module, name)
        if module == "torch.tensor":
            module = "torch._tensor"
        obj = R.ALLOWED.get(f"{module}.{name}")
        if obj is not None:
            return obj
        if module == "torch" or module.startswith("torch."):
            try:  # the ember counterpart of a torch class (torch.nn.modules.linear.Linear)
                found = importlib.import_module("ember" + module[5:])
                for part in name.split("."):
                    found = getattr(found, part)
                return found
            except (ImportError, AttributeError):
                pass
        return super().find_class(module, name)


class FullUnpickler(TorchNames, pickle.Unpickler):
    """The standard unpickler with torch's names mapped to ember's."""
