"""Named result tuples, as ``torch.return_types``: ``x.max(0)`` returns ``max(values, indices)``.

Each type is a tuple with read-only named fields (torch's are C "struct sequences"): it unpacks,
indexes and compares as a plain tuple, pickles, and prints as torch prints it::

    torch.return_types.max(
    values=tensor([3., 4.]),
    indices=tensor([1, 1]))
"""

from __future__ import annotations

__all__ = [
    "aminmax",
    "aminmax_out",
    "cummax",
    "cummax_out",
    "cummin",
    "cummin_out",
    "frexp",
    "frexp_out",
    "geqrf",
    "geqrf_out",
    "histogram",
    "histogram_out",
    "histogramdd",
    "histogramdd_out",
    "kthvalue",
    "kthvalue_out",
    "linalg_cholesky_ex",
    "linalg_cholesky_ex_out",
    "linalg_eig",
    "linalg_eig_out",
    "linalg_eigh",
    "linalg_eigh_out",
    "linalg_inv_ex",
    "linalg_inv_ex_out",
    "linalg_ldl_factor",
    "linalg_ldl_factor_ex",
    "linalg_ldl_factor_ex_out",
    "linalg_ldl_factor_out",
    "linalg_lstsq",
    "linalg_lstsq_out",
    "linalg_lu",
    "linalg_lu_factor",
    "linalg_lu_factor_ex",
    "linalg_lu_factor_ex_out",
    "linalg_lu_factor_out",
    "linalg_lu_out",
    "linalg_qr",
    "linalg_qr_out",
    "linalg_slogdet",
    "linalg_slogdet_out",
    "linalg_solve_ex",
    "linalg_solve_ex_out",
    "linalg_svd",
    "linalg_svd_out",
    "lu_unpack",
    "lu_unpack_out",
    "max",
    "max_out",
    "median",
    "median_out",
    "min",
    "min_out",
    "mode",
    "mode_out",
    "nanmedian",
    "nanmedian_out",
    "qr",
    "qr_out",
    "slogdet",
    "slogdet_out",
    "sort",
    "sort_out",
    "svd",
    "svd_out",
    "topk",
    "topk_out",
    "triangular_solve",
    "triangular_solve_out",
]


class _StructSeq(tuple):
    """Base of the named result tuples: a tuple of ``n_fields`` items with named fields."""

    __slots__ = ()
    _fields: tuple = ()
    n_fields = n_sequence_fields = 0
    n_unnamed_fields = 0

    def __new__(cls, sequence, dict=None):  # noqa: A002 - torch's structseq signature
        try:
            items = tuple(sequence)
        except TypeError:
            raise TypeError("constructor requires a sequence") from None
        if len(items) != cls.n_fields:
            raise TypeError(
                f"torch.return_types.{cls.__name__}() takes a {cls.n_fields}-sequence "
                f"({len(items)}-sequence given)"
            )
        return super().__new__(cls, items)

    def __repr__(self) -> str:
        body = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"torch.return_types.{type(self).__name__}(\n{body})"

    __str__ = __repr__

    def __reduce__(self):
        return (type(self), (tuple(self), {}))

    def __setattr__(self, name, value):
        raise AttributeError("readonly attribute")


def _field(i: int):
    return property(lambda self: tuple.__getitem__(self, i), doc=f"Field {i} of the result.")


def _make(name: str, fields: tuple) -> type:
    ns = {"__slots__": (), "_fields": fields, "n_fields": len(fields)}
    ns["n_sequence_fields"] = len(fields)
    ns["__module__"] = __name__
    ns["__doc__"] = f"The result of ``{name}``: a named tuple ({', '.join(fields)})."
    for i, f in enumerate(fields):
        ns[f] = _field(i)
    return type(name, (_StructSeq,), ns)


_VI = ("values", "indices")

max = _make("max", _VI)
min = _make("min", _VI)
median = _make("median", _VI)
nanmedian = _make("nanmedian", _VI)
mode = _make("mode", _VI)
kthvalue = _make("kthvalue", _VI)
sort = _make("sort", _VI)
topk = _make("topk", _VI)
cummax = _make("cummax", _VI)
cummin = _make("cummin", _VI)
aminmax = _make("aminmax", ("min", "max"))
frexp = _make("frexp", ("mantissa", "exponent"))
geqrf = _make("geqrf", ("a", "tau"))
histogram = _make("histogram", ("hist", "bin_edges"))
histogramdd = _make("histogramdd", ("hist", "bin_edges"))
qr = _make("qr", ("Q", "R"))
slogdet = _make("slogdet", ("sign", "logabsdet"))
svd = _make("svd", ("U", "S", "V"))
triangular_solve = _make("triangular_solve", ("solution", "cloned_coefficient"))
lu_unpack = _make("lu_unpack", ("P", "L", "U"))
linalg_cholesky_ex = _make("linalg_cholesky_ex", ("L", "info"))
linalg_eig = _make("linalg_eig", ("eigenvalues", "eigenvectors"))
linalg_eigh = _make("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_inv_ex = _make("linalg_inv_ex", ("inverse", "info"))
linalg_ldl_factor = _make("linalg_ldl_factor", ("LD", "pivots"))
linalg_ldl_factor_ex = _make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
linalg_lstsq = _make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
linalg_lu = _make("linalg_lu", ("P", "L", "U"))
linalg_lu_factor = _make("linalg_lu_factor", ("LU", "pivots"))
linalg_lu_factor_ex = _make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_qr = _make("linalg_qr", ("Q", "R"))
linalg_slogdet = _make("linalg_slogdet", ("sign", "logabsdet"))
linalg_solve_ex = _make("linalg_solve_ex", ("result", "info"))
linalg_svd = _make("linalg_svd", ("U", "S", "Vh"))

# the types of results written into ``out=`` tensors carry the same fields
max_out = _make("max_out", _VI)
min_out = _make("min_out", _VI)
median_out = _make("median_out", _VI)
nanmedian_out = _make("nanmedian_out", _VI)
mode_out = _make("mode_out", _VI)
kthvalue_out = _make("kthvalue_out", _VI)
sort_out = _make("sort_out", _VI)
topk_out = _make("topk_out", _VI)
cummax_out = _make("cummax_out", _VI)
cummin_out = _make("cummin_out", _VI)
aminmax_out = _make("aminmax_out", ("min", "max"))
frexp_out = _make("frexp_out", ("mantissa", "exponent"))
geqrf_out = _make("geqrf_out", ("a", "tau"))
histogram_out = _make("histogram_out", ("hist", "bin_edges"))
histogramdd_out = _make("histogramdd_out", ("hist", "bin_edges"))
qr_out = _make("qr_out", ("Q", "R"))
slogdet_out = _make("slogdet_out", ("sign", "logabsdet"))
svd_out = _make("svd_out", ("U", "S", "V"))
triangular_solve_out = _make("triangular_solve_out", ("solution", "cloned_coefficient"))
lu_unpack_out = _make("lu_unpack_out", ("P", "L", "U"))
linalg_cholesky_ex_out = _make("linalg_cholesky_ex_out", ("L", "info"))
linalg_eig_out = _make("linalg_eig_out", ("eigenvalues", "eigenvectors"))
linalg_eigh_out = _make("linalg_eigh_out", ("eigenvalues", "eigenvectors"))
linalg_inv_ex_out = _make("linalg_inv_ex_out", ("inverse", "info"))
linalg_ldl_factor_out = _make("linalg_ldl_factor_out", ("LD", "pivots"))
linalg_ldl_factor_ex_out = _make("linalg_ldl_factor_ex_out", ("LD", "pivots", "info"))
linalg_lstsq_out = _make("linalg_lstsq_out", ("solution", "residuals", "rank", "singular_values"))
linalg_lu_out = _make("linalg_lu_out", ("P", "L", "U"))
linalg_lu_factor_out = _make("linalg_lu_factor_out", ("LU", "pivots"))
linalg_lu_factor_ex_out = _make("linalg_lu_factor_ex_out", ("LU", "pivots", "info"))
linalg_qr_out = _make("linalg_qr_out", ("Q", "R"))
linalg_slogdet_out = _make("linalg_slogdet_out", ("sign", "logabsdet"))
linalg_solve_ex_out = _make("linalg_solve_ex_out", ("result", "info"))
linalg_svd_out = _make("linalg_svd_out", ("U", "S", "Vh"))
