# ruff: noqa: E501  (user code quoted verbatim)
"""User code found broken by probing with whole programs in the shape of the pytorch/examples
repository and well-known GitHub code (round 4), each fixed in ember: snippets compare what a
program prints under torch and ember, process-level cases compare their results."""

from __future__ import annotations

import importlib

from tests.oracle._user_code import check_snippet
from tests.oracle.helper import torch  # noqa: F401  (skips the module without torch)

# ------------------------------------------------------------------- mnist_hogwild: Parameters


def _hogwild_child(model, lr):
    for p in model.parameters():
        p.data.add_(lr)  # a worker's update, seen by the parent through shared memory


def _hogwild(libname: str) -> list:
    lib = importlib.import_module(libname)
    mp = importlib.import_module(libname + ".multiprocessing")
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    model.share_memory()
    before = [p.detach().clone() for p in model.parameters()]
    proc = mp.get_context("spawn").Process(target=_hogwild_child, args=(model, 1.0))
    proc.start()
    proc.join()
    return [proc.exitcode] + [(p.detach() - b).tolist() for p, b in zip(model.parameters(), before)]


def test_hogwild_parameters_are_shared_with_spawned_processes():
    # ember's Tensor reduction was registered before nn.Parameter existed: a Parameter reached
    # a spawned process as a pickled copy, and the workers' updates were lost
    assert _hogwild("ember") == _hogwild("torch")


# ----------------------------------------------- word_language_model: torch.save(whole model)

_SAVE_TRANSFORMER = """
import io
torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2, enable_nested_tensor=False)
dec = nn.TransformerDecoderLayer(8, 2, 16, 0.0)
for m in (enc, dec, nn.Transformer(8, 2, 1, 1, 16, 0.0)):
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    m2 = torch.load(buf, weights_only=False)
    print(type(m2).__name__, m2.state_dict().keys() == m.state_dict().keys())
x = torch.randn(5, 1, 8)
print(enc(x).sum().item() == m2.encoder(x).sum().item() or True)
buf = io.BytesIO(); torch.save(enc, buf); buf.seek(0); enc2 = torch.load(buf, weights_only=False)
print(torch.equal(enc.eval()(x), enc2.eval()(x)), enc2.layers[0].activation is F.relu)
buf = io.BytesIO(); torch.save([F.relu, F.gelu, F.relu], buf); buf.seek(0)
fs = torch.load(buf, weights_only=False)
print([f is g for f, g in zip(fs, (F.relu, F.gelu, F.relu))])
"""


def test_whole_model_save_of_transformer_layers():
    # the layers keep activation=F.relu as captured by their default argument, before ember
    # wrapped nn.functional's functions: pickle found another object under that name
    check_snippet(_SAVE_TRANSFORMER)


# ------------------------------------------------------- dcgan / imagenet: backend submodules

_CUDNN_IMPORT = """
import torch.backends.cudnn as cudnn
import torch.backends.mps
from torch.backends import cuda as tb_cuda
cudnn.benchmark = True
cudnn.deterministic = False
print(torch.backends.cudnn.benchmark, cudnn.is_available(), torch.backends.mps.is_available())
print(tb_cuda is torch.backends.cuda, cudnn is torch.backends.cudnn)
import torch.backends.mkldnn, torch.backends.openmp, torch.backends.mkl, torch.backends.opt_einsum
cudnn.benchmark = False
"""


def test_import_backends_cudnn_as_a_module():
    # the pytorch/examples' `import torch.backends.cudnn as cudnn`: the backends were attributes,
    # not importable modules
    check_snippet(_CUDNN_IMPORT)


# ------------------------------------------------- attention code: softmax of a permuted tensor

_SOFTMAX_STRIDES = """
torch.manual_seed(0)
x = torch.randn(2, 3, 4, requires_grad=True)
for t in (x.transpose(0, 2), x.permute(1, 2, 0), x[:, ::2], x.transpose(1, 2)):
    for f in (F.softmax, F.log_softmax):
        y = f(t, dim=-1)
        print(y.stride(), y.is_contiguous(), y.view(-1).shape)
    print(t.softmax(0).stride(), torch.log_softmax(t, 1).stride())
scores = torch.randn(2, 5, 3).transpose(1, 2)  # (B, T, S) built as (B, S, T)
att = F.softmax(scores, dim=-1).view(2, -1)
att.sum().backward() if att.requires_grad else None
print(att.shape)
c = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
print(F.softmax(c, 1).is_contiguous(), F.log_softmax(c, 1).stride())
"""


def test_softmax_result_is_contiguous_as_torch():
    # torch's softmax kernels write a contiguous result; ember's kept the input's strides, so
    # `F.softmax(scores.transpose(1, 2), -1).view(B, -1)` raised where torch's works
    check_snippet(_SOFTMAX_STRIDES)


# ------------------------------------------- ResNet definitions: torch.hub / utils.model_zoo

_HUB = r"""
import os, shutil, tempfile
import torch.utils.model_zoo as model_zoo
from torch.hub import load_state_dict_from_url
old = torch.hub._hub_dir
d = tempfile.mkdtemp()
try:
    torch.hub.set_dir(d)
    print(torch.hub.get_dir() == d, torch.hub.HASH_REGEX.pattern, torch.hub.__name__.split(".")[1:])
    os.makedirs(os.path.join(d, "checkpoints"))
    torch.manual_seed(0)
    torch.save(nn.Linear(2, 2).state_dict(), os.path.join(d, "checkpoints", "lin-5c106cde.pth"))
    print(load_state_dict_from_url("https://example.com/models/lin-5c106cde.pth", progress=False))
    print(model_zoo.load_url("https://example.com/m/lin-5c106cde.pth", map_location="cpu")["bias"])
    print(torch.hub.load_state_dict_from_url("https://e.com/a?x=1", file_name="lin-5c106cde.pth").keys())
    with open(os.path.join(d, "hubconf.py"), "w") as f:
        f.write("dependencies = ['numpy']\ndef tiny(n=2, scale=1):\n    '''A tiny entrypoint.'''\n    return [i * scale for i in range(n)]\n_hidden = 1\n")
    print(torch.hub.load(d, "tiny", 3, source="local", scale=2))
    for bad in (dict(model="nope", source="local"), dict(model="tiny", source="svn"), dict(model=3, source="local")):
        try:
            torch.hub.load(d, **bad)
        except Exception as e:
            print(type(e).__name__, e)
finally:
    torch.hub._hub_dir = old
    shutil.rmtree(d)
"""


def test_torch_hub_and_model_zoo():
    # the torchvision-style ResNet files import torch.hub / torch.utils.model_zoo for their
    # pretrained weights: ember had neither module
    check_snippet(_HUB)


# ----------------------------------------------- imagenet / DDP tutorials: one-process DDP

_DDP = """
import socket, warnings
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
try:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    for kw in ({}, {"broadcast_buffers": False}, {"forward_sync_buffers": False},
               {"broadcast_buffers": True, "forward_sync_buffers": False}):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m = DDP(net, **kw)
        print([(x.category.__name__, str(x.message)[:60]) for x in w])
        print(m.broadcast_buffers, m.forward_sync_buffers, m.will_sync_module_buffers())
    m.broadcast_buffers = True
    print(m.forward_sync_buffers)
    try:
        DDP(nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))))
    except ValueError as e:
        print("ValueError", e)
finally:
    dist.destroy_process_group()
"""


def test_ddp_buffer_flags_and_sync_batchnorm():
    # torch 2.13 renamed broadcast_buffers (deprecated, a FutureWarning) to forward_sync_buffers;
    # SyncBatchNorm inside a CPU DDP is torch's ValueError (ember trained with it)
    check_snippet(_DDP)
