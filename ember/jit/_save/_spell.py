"""How one IR node reads as TorchScript: operator spellings and keyword-only arguments.

A node of kind ``aten::op`` reads ``torch.op(args)``, ``prim::op`` reads ``ops.prim.op(args)``.
The arguments a schema declares keyword-only (after its ``*``) are written ``name=value`` (or
left out when they hold the default), since TorchScript binds positional arguments only to
the positional part of a schema.
"""

from __future__ import annotations

import inspect

__all__ = ["DEFAULT_NONE_TAIL", "KEYWORD_ONLY", "INFIX", "node_keywords", "payload_vars"]

# kind -> the trailing arguments that are keyword-only in torch's schema: (name, default)
_ALPHA = (("alpha", 1),)
_DTYPE = (("dtype", None),)
KEYWORD_ONLY: dict[str, tuple] = {
    "aten::add": _ALPHA,
    "aten::sub": _ALPHA,
    "aten::rsub": _ALPHA,
    "aten::add_": _ALPHA,
    "aten::sub_": _ALPHA,
    "aten::addmm": (("beta", 1), ("alpha", 1)),
    "aten::addmm_": (("beta", 1), ("alpha", 1)),
    "aten::sum": _DTYPE,
    "aten::mean": _DTYPE,
    "aten::prod": _DTYPE,
    "aten::gelu": (("approximate", "none"),),
    "aten::clone": (("memory_format", None),),
    "aten::contiguous": (("memory_format", 0),),
}
KEYWORD_ONLY["aten::scaled_dot_product_attention"] = (("scale", None), ("enable_gqa", False))
_FACTORY = (("dtype", None), ("layout", None), ("device", None), ("pin_memory", None))
_LIKE = (*_FACTORY, ("memory_format", None))
_GENERATOR = (("generator", None),)
KEYWORD_ONLY.update(
    {f"aten::{k}": _FACTORY for k in ("zeros", "ones", "full", "arange", "rand", "randn")}
)
KEYWORD_ONLY.update({f"aten::{k}_like": _LIKE for k in ("zeros", "ones", "empty", "full")})
KEYWORD_ONLY.update({"aten::rand_like": _LIKE, "aten::randn_like": _LIKE, "aten::empty": _LIKE})
KEYWORD_ONLY.update(
    {f"aten::{k}": _GENERATOR for k in ("bernoulli", "bernoulli_", "uniform_", "normal_", "normal")}
)

# kind -> how many leading arguments are required: the ones after may be left out when None
# (their schema default), as torch's printer leaves them out
DEFAULT_NONE_TAIL: dict[str, int] = {
    "aten::softmax": 2,
    "aten::log_softmax": 2,
    "aten::linear": 2,
    "aten::clamp": 1,
    "aten::to": 2,
}

# kind -> (how many leading arguments are required, the printed defaults of the ones after):
# trailing arguments at their default are left out, as torch's printer leaves them out
DEFAULT_TAIL: dict[str, tuple[int, tuple[str, ...]]] = {
    "aten::flatten": (1, ("0", "-1")),
    **{f"aten::max_pool{d}d": (2, ("[]", "0", "1", "False")) for d in (1, 2, 3)},
}

# Python operators for arithmetic on numbers (ints, floats, bools), where torch's printer too
# writes the operator
INFIX = {
    "aten::add": "+",
    "aten::sub": "-",
    "aten::mul": "*",
    "aten::div": "/",
    "aten::floordiv": "//",
    "aten::remainder": "%",
    "aten::pow": "**",
    "aten::lt": "<",
    "aten::gt": ">",
    "aten::le": "<=",
    "aten::ge": ">=",
    "aten::eq": "==",
    "aten::ne": "!=",
    "aten::__is__": "is",
    "aten::__isnot__": "is not",
    "aten::__and__": "and",
    "aten::__or__": "or",
}


def payload_vars(node) -> dict:
    """The names a node's ``_payload`` closes over (the op and parameters a frontend attached
    to a node without a torch schema), or an empty dict."""
    fn = getattr(node, "_payload", None)
    if fn is None or not inspect.isfunction(fn):
        return {}
    found = dict(inspect.getclosurevars(fn).nonlocals)
    if fn.__defaults__:  # payloads binding their context as default arguments
        code = fn.__code__
        names = code.co_varnames[: code.co_argcount]
        found.update(zip(names[len(names) - len(fn.__defaults__) :], fn.__defaults__))
    found.update(fn.__kwdefaults__ or {})
    return found


def node_keywords(node, n_args: int) -> tuple[int, list[str]] | None:
    """Return ``(n_positional, keyword names)`` for a node the compiler made from a call as
    the user wrote it (its payload carries the keyword names), or None for a recorded op
    (whose arguments follow the schema: its keyword-only tail is ``KEYWORD_ONLY``'s)."""
    found = payload_vars(node)
    names = found.get("names")
    if isinstance(names, list) and isinstance(found.get("npos"), int):
        lead = n_args - len(names)  # the receiver of a method call counts as positional
        return lead, list(names)
    return None
