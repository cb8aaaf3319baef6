"""``nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and ``spectral_norm`` as
parametrizations (torch's state-dict keys: ``parametrizations.weight.original0/1``,
``...weight.0._u``, ``...weight.0.base``)."""

from __future__ import annotations

from enum import Enum, auto

import numpy as np

import ember
import ember.linalg
from ember._core.tensor import Tensor
from ember.nn.modules.module import Module
from ember.nn.utils import parametrize

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


def _is_orthogonal(Q: Tensor) -> bool:
    # Q^H Q = I up to a tolerance growing with the number of rows summed
    rows, cols = Q.shape[-2:]
    tolerance = 10.0 * rows * ember.finfo(Q.dtype).eps
    return ember.allclose(Q.mH @ Q, ember.eye(cols, dtype=Q.dtype), atol=tolerance)


def _make_orthogonal(A: Tensor) -> Tensor:
    # the Q of A = QR (A tall) with diag(R) real and non-negative (unique, so LAPACK's Q)
    q, r = np.linalg.qr(A._data)
    d = np.diagonal(r, axis1=-2, axis2=-1)
    sgn = np.where(d == 0, 1, d / np.where(d == 0, 1, np.abs(d)))
    return ember.from_numpy(np.ascontiguousarray(q * sgn[..., None, :]))


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:
    # H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^H with v_i = e_i + A[i+1:, i]; first k columns
    n, k = A.size(-2), A.size(-1)
    V = A.tril(-1) + ember.eye(n, k, dtype=A.dtype)
    Q = ember.eye(n, dtype=A.dtype).expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = V[..., :, i : i + 1]
        Q = Q - (Q @ v) * tau[..., i : i + 1].unsqueeze(-1) @ v.mH
    return Q[..., :k]


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _skew_map(X: Tensor, n: int, k: int, exponential: bool) -> Tensor:
    """The first ``k`` columns of an orthogonal map of the skew-Hermitian ``A = L - L^H``
    (``L`` the lower triangle of ``X``, zero-padded to ``n x n``): ``exp(A)``, or the Cayley
    transform ``(I - A/2)^-1 (I + A/2)``."""
    low = X.tril()
    if n != k:
        pad = low.new_zeros(n, n - k).expand(*low.shape[:-2], -1, -1)
        low = ember.cat([low, pad], dim=-1)
    skew = low - low.mH
    if exponential:
        square = ember.linalg.matrix_exp(skew)
    else:
        eye = ember.eye(n, dtype=skew.dtype)
        square = ember.linalg.solve(eye - 0.5 * skew, eye + 0.5 * skew)
    return square[..., :k] if n != k else square


def _reflector_map(X: Tensor) -> Tensor:
    """The product of Householder reflectors stored below the diagonal of ``X`` (each with
    the tau that makes it a reflection), its columns' signs taken from ``X``'s diagonal."""
    below = X.tril(diagonal=-1)
    tau = 2.0 / (1.0 + (below * below).sum(dim=-2))
    signs = X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
    return _householder_product(below, tau) * signs


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization=True) -> None:
        super().__init__()
        if orthogonal_map is _OrthMaps.householder and weight.is_complex():
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        # work on the tall orientation; a wide matrix is mapped transposed
        wide = X.size(-2) < X.size(-1)
        tall = X.mT if wide else X
        n, k = tall.shape[-2:]
        if self.orthogonal_map is _OrthMaps.householder:
            Q = _reflector_map(tall)
        else:
            Q = _skew_map(tall, n, k, exponential=self.orthogonal_map is _OrthMaps.matrix_exp)
        if hasattr(self, "base"):
            # the trivialization: the map moves around the stored orthogonal base point
            Q = self.base @ Q
        return Q.mT if wide else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with ember.no_grad():
            if Q.shape != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. "
                    f"Got a tensor of shape {Q.shape}."
                )
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential "
                        "or the Cayley parametrizations when use_trivialization=False."
                    )
                # geqrf: LAPACK's raw QR (NumPy returns the reflectors transposed)
                h, tau = np.linalg.qr(Q._data, mode="raw")
                A = np.ascontiguousarray(np.swapaxes(h, -1, -2))
                idx = np.arange(k)
                diag = np.sign(A[..., idx, idx])
                diag[tau == 0.0] *= -1
                A[..., idx, idx] = diag
                A = ember.from_numpy(A)
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = ember.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(ember.cat([Q, N], dim=-1))
            self.base = Q
            # store -I: every map sends it to the identity (its skew part is 0; its reflectors
            # are -e_i e_i^H flips undone by the -1 signs), so the value is the base itself
            rows, cols = Q_init.shape[-2:]
            return ember.zeros_like(Q_init) - ember.eye(rows, cols, dtype=Q_init.dtype)


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Make ``module.<name>`` an orthogonal (or unitary) matrix, parametrized through
    ``matrix_exp``, ``cayley`` or ``householder``; return ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        # householder needs a real, non-square matrix to be the better default
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    chosen = _OrthMaps.__members__.get(orthogonal_map)
    if chosen is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    mapping = _Orthogonal(weight, chosen, use_trivialization=use_trivialization)
    # unsafe: the map may change dtype/shape checks torch skips here too
    parametrize.register_parametrization(module, name, mapping, unsafe=True)
    return module


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    # the 2-norm over every dim but ``dim`` (kept as size 1); dim == -1: the whole tensor
    if dim == -1:
        return ember.linalg.vector_norm(v)
    other = tuple(d for d in range(v.dim()) if d != dim)
    return ember.linalg.vector_norm(v, 2, dim=other, keepdim=True)


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor):
        weight_g = _norm_except_dim(weight, self.dim)
        return weight_g, weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (magnitude ``original0``,
    direction ``original1``); return ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def rename_old_keys(mod, state_dict, prefix, *_):
        # checkpoints of the old nn.utils.weight_norm store ``<name>_g`` / ``<name>_v``
        old = [f"{prefix}{name}_g", f"{prefix}{name}_v"]
        if all(key in state_dict for key in old):
            for i, key in enumerate(old):
                state_dict[f"{prefix}parametrizations.{name}.original{i}"] = state_dict.pop(key)

    module.register_load_state_dict_pre_hook(rename_old_keys)
    return module


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / ember.clamp(ember.linalg.vector_norm(x), min=eps)


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            rows, cols = mat.shape
            # random unit starting vectors (u drawn first), then 15 iterations up front so
            # the first forward already sees a good estimate
            start_u = mat.new_empty(rows).normal_(0, 1)
            start_v = mat.new_empty(cols).normal_(0, 1)
            self.register_buffer("_u", _normalize(start_u, self.eps))
            self.register_buffer("_v", _normalize(start_v, self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        # rows along ``dim``, every other dimension flattened into the columns
        return ember.movedim(weight, self.dim, 0).flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u <- W v / |W v|, v <- W^H u / |W^H u|, in place in the buffers
        with ember.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(weight_mat @ self._v, self.eps))
                self._v.copy_(_normalize(weight_mat.mH @ self._u, self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            # a vector's only singular value is its norm
            return _normalize(weight, self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        # copies: the buffers change in place at the next training step
        left, right = self._u.clone(), self._v.clone()
        return weight / ember.vdot(left, mat @ right)

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Reparametrize ``module.<name>`` as ``W / sigma(W)`` (largest singular value, by power
    iteration in training mode); return ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = type(module).__name__ in (
            "ConvTranspose1d",
            "ConvTranspose2d",
            "ConvTranspose3d",
        )
        dim = 1 if transposed else 0
    normaliser = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, normaliser)
    return module
