"""``bitsandbytes.functional``: block-wise 8-bit quantization (ember.optim._quant8)."""

from ember.optim._quant8 import (
    QuantState,
    create_dynamic_map,
    dequantize_blockwise,
    quantize_blockwise,
)

__all__ = ["QuantState", "create_dynamic_map", "dequantize_blockwise", "quantize_blockwise"]
