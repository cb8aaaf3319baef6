"""Tensor layouts: ``torch.strided`` (dense) and ``torch.sparse_coo`` (``ember.sparse``)."""

from __future__ import annotations


class layout:  # noqa: N801  (torch's name)
    """The memory layout of a tensor, as ``torch.layout``: ``torch.strided`` or
    ``torch.sparse_coo``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return "torch." + self.name

    def __eq__(self, other) -> bool:
        # dense tensors still report their layout as the text "torch.strided": equal to it
        if isinstance(other, str):
            return other == "torch." + self.name
        return self is other

    def __hash__(self) -> int:
        return hash("torch." + self.name)

    def __reduce__(self):
        return (_layout_named, (self.name,))


def _layout_named(name: str) -> layout:
    return LAYOUTS[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
_mkldnn = layout("_mkldnn")
jagged = layout("jagged")
_ALL = (strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc, _mkldnn, jagged)
LAYOUTS = {lay.name: lay for lay in _ALL}
