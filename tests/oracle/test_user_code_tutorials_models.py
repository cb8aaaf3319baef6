"""User code: the model-building and training tutorials (quickstart, "What is torch.nn really?",
the CIFAR-10 blitz with checkpoints, warm-starting and hooks, optimizers and LR schedulers in a
loop, DCGAN/VAE/DQN/RNN/EmbeddingBag models, the Transformer language model), each as a whole
script compared line by line with torch (see ``_user_code_scripts.py``)."""

from __future__ import annotations

import pytest

from tests.oracle._user_code_scripts import check_script


@pytest.mark.parametrize(
    "name",
    ["quickstart", "nnreally", "hooks_ckpt", "module_hooks", "optloop", "models", "transformer"],
)
def test_script(name, tmp_path):
    check_script(name, tmp_path)
