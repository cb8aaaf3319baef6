# ruff: noqa  (tutorial-style user code, kept as users write it)

import torch, math
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from _common import det_init, det_data


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):
    def __init__(
        self, ntoken: int, d_model: int, nhead: int, d_hid: int, nlayers: int, dropout: float = 0.5
    ):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(
            encoder_layers, nlayers, enable_nested_tensor=False
        )
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


model = TransformerModel(20, 8, 2, 16, 2, 0.0)
det_init(model, 0.2)
print(model)
src = (torch.arange(12) % 20).reshape(6, 2)
out = model(src)
print(out.shape, out[0, 0, :4])
print(nn.Transformer.generate_square_subsequent_mask(3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
for i in range(2):
    output = model(src)
    loss = criterion(output.view(-1, 20), src.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    scheduler.step()
    print(f"{loss.item():.4f} {math.exp(loss.item()):.2f} {scheduler.get_last_lr()[0]:02.2f}")
mha = nn.MultiheadAttention(8, 2, batch_first=True)
det_init(mha)
q = det_data(2, 3, 8)
o, w = mha(
    q,
    q,
    q,
    need_weights=True,
    key_padding_mask=torch.tensor([[False, False, True], [False, False, False]]),
)
print(o.shape, w)
o, w = mha(
    q, q, q, attn_mask=nn.Transformer.generate_square_subsequent_mask(3), average_attn_weights=False
)
print(w.shape)
print(F.scaled_dot_product_attention(q, q, q, is_causal=True)[0, 0])
print(
    F.scaled_dot_product_attention(
        q.view(2, 3, 2, 4).transpose(1, 2),
        q.view(2, 3, 2, 4).transpose(1, 2),
        q.view(2, 3, 2, 4).transpose(1, 2),
        attn_mask=torch.ones(3, 3, dtype=torch.bool).tril(),
        dropout_p=0.0,
        scale=0.5,
    ).shape
)
t = nn.Transformer(
    d_model=8,
    nhead=2,
    num_encoder_layers=1,
    num_decoder_layers=1,
    dim_feedforward=16,
    dropout=0.0,
    batch_first=True,
)
det_init(t, 0.1)
print(t(q, q[:, :2]).shape)
dec = nn.TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=True, activation="gelu")
det_init(dec)
print(dec(q, q, tgt_is_causal=False).shape)
ln = nn.LayerNorm(8)
print(ln(q)[0, 0], ln)
print(nn.RMSNorm(8)(q)[0, 0] if hasattr(nn, "RMSNorm") else "")
emb = nn.Embedding(10, 3, padding_idx=0)
print(emb.weight[0], emb)
print(F.embedding(torch.tensor([[1, 2]]), torch.arange(30.0).view(10, 3)))
print(
    nn.GELU(approximate="tanh")(torch.tensor([1.0])),
    F.gelu(torch.tensor([1.0])),
    F.silu(torch.tensor([1.0])),
    F.mish(torch.tensor([1.0])),
)
