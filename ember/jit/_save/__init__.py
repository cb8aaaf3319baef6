"""``ember.jit.save``'s writer: TorchScript archives that real ``torch.jit.load`` runs.

- ``_source``: a graph as TorchScript source (``def forward(self, x: Tensor) -> Tensor:``).
- ``_spell`` / ``_lower``: how nodes read as torch calls (keyword-only arguments, ops
  without a torch schema such as ember's recurrent kernel).
- ``_classes``: the archive's classes for a module tree (names, mangling, declarations).
- ``_archive``: the pickles and the zip records, written atomically.
"""

from ember.jit._save._archive import archive_bytes, write_archive
from ember.jit._save._source import FunctionPrinter, SaveError

__all__ = ["FunctionPrinter", "SaveError", "archive_bytes", "write_archive"]
