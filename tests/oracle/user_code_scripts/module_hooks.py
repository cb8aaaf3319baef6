# ruff: noqa  (tutorial-style user code, kept as users write it)
import torch, torch.nn as nn

torch.manual_seed(0)
m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
with torch.no_grad():
    for i, p in enumerate(m.parameters()):
        p.copy_(torch.linspace(-1, 1, p.numel()).view(p.shape) * (i + 1))
x = torch.linspace(-1, 1, 6).view(2, 3)


def fwd_kw(mod, args, kwargs, out):
    print("fwd_kw", type(mod).__name__, len(args), kwargs, out.shape)


h1 = m[0].register_forward_hook(fwd_kw, with_kwargs=True)
h2 = m[0].register_forward_pre_hook(
    lambda mod, args, kwargs: print("pre_kw", kwargs) or None, with_kwargs=True
)
h3 = m[0].register_forward_hook(lambda mod, i, o: print("prepended"), prepend=True)
h4 = m[2].register_forward_hook(lambda mod, i, o: o * 0 + 1)
print(m(x))
for h in (h1, h2, h3, h4):
    h.remove()
h5 = m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
print(m(x))
h5.remove()


def bpre(mod, grad_output):
    print("bpre", [g.shape for g in grad_output])
    return (grad_output[0] * 2,)


def bhook(mod, grad_input, grad_output):
    print(
        "bhook",
        [None if g is None else g.shape for g in grad_input],
        [g.shape for g in grad_output],
    )


hb1 = m[2].register_full_backward_pre_hook(bpre)
hb2 = m[2].register_full_backward_hook(bhook)
xx = x.clone().requires_grad_()
m(xx).sum().backward()
print(xx.grad)
hb1.remove()
hb2.remove()
g = nn.modules.module.register_module_forward_hook(
    lambda mod, i, o: print("global", type(mod).__name__)
)
m(x)
g.remove()


def sd_hook(module, state_dict, prefix, local_metadata):
    state_dict[prefix + "extra"] = torch.tensor(1.0)
    return state_dict


hsd = m[0]._register_state_dict_hook(sd_hook)
print(list(m.state_dict().keys()))
hsd.remove()


def post_load(module, incompatible_keys):
    print("post_load", incompatible_keys.missing_keys, incompatible_keys.unexpected_keys)


m[0].register_load_state_dict_post_hook(post_load)
print(m.load_state_dict(m.state_dict()))


def pre_load(
    module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
):
    print("pre_load", prefix, sorted(state_dict.keys())[:2])


m[2]._register_load_state_dict_pre_hook(pre_load, with_module=True)
m.load_state_dict(m.state_dict())
print(
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: print("sd pre", prefix))
    is not None
)
m.state_dict()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.register_buffer("running", torch.zeros(2))
        self.register_buffer("tmp", torch.ones(2), persistent=False)
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.fc(x) * self.scale


n = Net()
print(
    list(n.state_dict().keys()),
    [k for k, _ in n.named_buffers()],
    [k for k, _ in n.named_parameters()],
)
print(n.get_submodule("fc"), n.get_parameter("fc.weight").shape, n.get_buffer("running"))
print(n)
n.extra = nn.Linear(1, 1)
print([k for k, _ in n.named_children()])
del n.extra
print([k for k, _ in n.named_children()])
print(sum(p.numel() for p in n.parameters() if p.requires_grad))
n.fc.weight.requires_grad_(False)
print([k for k, p in n.named_parameters() if p.requires_grad])
print(nn.utils.clip_grad_norm_(nn.Linear(2, 2).parameters(), 1.0))
p = nn.Parameter(torch.tensor([3.0, 4.0]))
p.grad = torch.tensor([3.0, 4.0])
print(nn.utils.clip_grad_norm_([p], max_norm=1.0, norm_type=2.0), p.grad)
p.grad = torch.tensor([3.0, -4.0])
print(nn.utils.clip_grad_norm_([p], 1.0, norm_type="inf"), p.grad)
p.grad = torch.tensor([float("nan"), 1.0])
try:
    nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print("RuntimeError", e)
p.grad = torch.tensor([3.0, -4.0])
nn.utils.clip_grad_value_([p], clip_value=0.5)
print(p.grad)
print(nn.utils.clip_grad_norm_(p, 10.0, foreach=True))


def old_style_pre(state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
    # a checkpoint conversion: rename an old key before loading
    if prefix + "old_weight" in state_dict:
        state_dict[prefix + "weight"] = state_dict.pop(prefix + "old_weight")


lin = nn.Linear(2, 2)
lin._register_load_state_dict_pre_hook(old_style_pre)
old = {"old_weight": torch.ones(2, 2), "bias": torch.zeros(2)}
print(lin.load_state_dict(old), lin.weight)
