"""User code: the Learn-the-Basics / 60-minute-blitz tensor pages, indexing and reduction idioms,
printing, and the data utilities (Dataset, DataLoader, samplers, collate, splits), each as a
whole script compared line by line with torch (see ``_user_code_scripts.py``)."""

from __future__ import annotations

import pytest

from tests.oracle._user_code_scripts import check_script


@pytest.mark.parametrize(
    "name", ["tensors", "idioms", "printing", "customfn", "transforms", "data"]
)
def test_script(name, tmp_path):
    check_script(name, tmp_path)
