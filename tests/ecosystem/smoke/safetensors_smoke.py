"""safetensors' README: save_file/load_file and safe_open(framework="pt") with torch tensors,
a model's state_dict through save_model/load_model, lazy slices."""

import os
import tempfile

import torch
from safetensors import safe_open
from safetensors.torch import load, load_file, load_model, save, save_file, save_model

tensors = {
    "embedding": torch.randn(4, 3),
    "ids": torch.arange(6, dtype=torch.int64).reshape(2, 3),
    "half": torch.ones(5, dtype=torch.float16),
    "flags": torch.tensor([True, False]),
}
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "model.safetensors")
    save_file(tensors, path, metadata={"format": "pt"})
    back = load_file(path)
    assert back.keys() == tensors.keys()
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v)
    with safe_open(path, framework="pt", device="cpu") as f:
        assert f.metadata() == {"format": "pt"}
        assert torch.equal(f.get_slice("embedding")[1:3], tensors["embedding"][1:3])
        assert torch.equal(f.get_tensor("ids"), tensors["ids"])

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    mpath = os.path.join(d, "net.safetensors")
    save_model(model, mpath)
    other = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    missing, unexpected = load_model(other, mpath)
    assert not missing and not unexpected
    x = torch.randn(5, 3)
    assert torch.equal(model(x), other(x))

assert torch.equal(load(save(tensors))["ids"], tensors["ids"])
print("safetensors ok")
