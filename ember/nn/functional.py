"""torch.nn.functional: the functional forms of ember.nn's layers, activations and losses.

A thin re-export module; the implementations live in ``ember/nn/_functional/`` by kind.
"""

from __future__ import annotations

from ember.nn._functional.activation import *  # noqa: F403
from ember.nn._functional.activation import __all__ as _activation_all
from ember.nn._functional.dropout import *  # noqa: F403
from ember.nn._functional.dropout import __all__ as _dropout_all
from ember.nn._functional.loss import *  # noqa: F403
from ember.nn._functional.loss import __all__ as _loss_all
from ember.nn._functional.loss_margin import *  # noqa: F403
from ember.nn._functional.loss_margin import __all__ as _loss_margin_all
from ember.nn._functional.misc import *  # noqa: F403
from ember.nn._functional.misc import __all__ as _misc_all
from ember.nn._functional.normalization import *  # noqa: F403
from ember.nn._functional.normalization import __all__ as _normalization_all

__all__ = list(_activation_all) + list(_loss_all) + list(_dropout_all)
__all__ += list(_normalization_all) + list(_misc_all)
__all__ += list(_loss_margin_all)

from ember.nn._functional.conv import *  # noqa: E402, F403
from ember.nn._functional.conv import __all__ as _conv_all  # noqa: E402
from ember.nn._functional.pooling import *  # noqa: E402, F403
from ember.nn._functional.pooling import __all__ as _pooling_all  # noqa: E402
from ember.nn._functional.vision import *  # noqa: E402, F403
from ember.nn._functional.vision import __all__ as _vision_all  # noqa: E402

__all__ += list(_conv_all) + list(_pooling_all) + list(_vision_all)

from ember.nn._functional.attention import *  # noqa: E402, F403
from ember.nn._functional.attention import __all__ as _attention_all  # noqa: E402
from ember.nn._functional.attention import _canonical_mask, _none_or_dtype  # noqa: E402, F401

__all__ += list(_attention_all)

from ember.nn._functional.fractional import *  # noqa: E402, F403
from ember.nn._functional.fractional import __all__ as _fractional_all  # noqa: E402

__all__ += list(_fractional_all)

# the composites torch records as one graph node (``aten::linear``...) announce themselves to
# the tracer (``registry.composite``); listed here, in one place
from ember._ops.registry import composite as _composite  # noqa: E402
from ember.nn import grad  # noqa: E402, F401  (torch.nn.functional.grad is torch.nn.grad)

for _name, _kind in (
    ("linear", "aten::linear"),
    ("conv1d", "aten::_convolution"),
    ("conv2d", "aten::_convolution"),
    ("conv3d", "aten::_convolution"),
    ("batch_norm", "aten::batch_norm"),
    ("layer_norm", "aten::layer_norm"),
    ("dropout", "aten::dropout"),
    ("relu", "aten::relu"),
    ("softmax", "aten::softmax"),
    ("log_softmax", "aten::log_softmax"),
    ("max_pool2d", "aten::max_pool2d"),
    ("gelu", "aten::gelu"),
    ("scaled_dot_product_attention", "aten::scaled_dot_product_attention"),
    ("group_norm", "aten::group_norm"),
):
    globals()[_name] = _composite(_kind)(globals()[_name])
    # pickle finds a function by module and name: the wrapper is what lives here
    globals()[_name].__module__ = __name__
del _name, _kind
