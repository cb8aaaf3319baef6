"""``torch.linalg``: linear algebra on (batches of) matrices.

Everything here is implemented in ``ember._ops`` (the op table); this module is the public
namespace only.
"""

from ember._ops.linalg import linalg_cross as cross
from ember._ops.linalg import linalg_diagonal as diagonal
from ember._ops.linalg import matmul, matrix_power, multi_dot, vecdot
from ember._ops.linalg_decomp import (
    cholesky,
    cholesky_ex,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    matrix_rank,
    pinv,
    qr,
    svd,
    svdvals,
)
from ember._ops.linalg_extra import (
    householder_product,
    lu,
    tensorinv,
    tensorsolve,
    vander,
)
from ember._ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from ember._ops.linalg_norm import cond, matrix_norm, norm, vector_norm
from ember._ops.linalg_solve import (
    det,
    inv,
    inv_ex,
    lstsq,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    matrix_exp,
    slogdet,
    solve,
    solve_ex,
    solve_triangular,
)
from ember._ops.linalg_util import LinAlgError

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]
