# ruff: noqa  (tutorial-style user code, kept as users write it)

import torch, math
import torch.nn as nn
import torch.nn.functional as F
from _common import det_init, det_data

# DCGAN
nz, ngf, ndf, nc = 8, 4, 4, 3


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.constant_(m.weight.data, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.constant_(m.weight.data, 1.0)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, ngpu):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input)


netG = Generator(0)
netG.apply(weights_init)
print(netG)
netD = Discriminator(0)
netD.apply(weights_init)
print(netD)
criterion = nn.BCELoss()
fixed_noise = det_data(4, nz, 1, 1)
real_label, fake_label = 1.0, 0.0
optimizerD = torch.optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
real_cpu = det_data(4, nc, 16, 16)
for it in range(2):
    netD.zero_grad()
    b_size = real_cpu.size(0)
    label = torch.full((b_size,), real_label, dtype=torch.float)
    output = netD(real_cpu).view(-1)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    fake = netG(fixed_noise)
    label.fill_(fake_label)
    output = netD(fake.detach()).view(-1)
    errD_fake = criterion(output, label)
    errD_fake.backward()
    errD = errD_real + errD_fake
    optimizerD.step()
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake).view(-1)
    errG = criterion(output, label)
    errG.backward()
    optimizerG.step()
    print("Loss_D: %.4f\tLoss_G: %.4f\tD(x): %.4f" % (errD.item(), errG.item(), D_x))
print(fake.shape)


# VAE
class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 8)
        self.fc21 = nn.Linear(8, 2)
        self.fc22 = nn.Linear(8, 2)
        self.fc3 = nn.Linear(2, 8)
        self.fc4 = nn.Linear(8, 16)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.ones_like(std) * 0.1
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 16))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 16), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


vae = VAE()
det_init(vae)
x = (det_data(5, 16) + 1) / 2
r, mu, lv = vae(x)
l = loss_function(r, x, mu, lv)
l.backward()
print(l)
# Spatial transformer
theta = torch.tensor([[[1.0, 0.1, 0.0], [0.0, 0.9, 0.1]]])
grid = F.affine_grid(theta, (1, 1, 5, 5), align_corners=False)
print(grid.shape, F.grid_sample(det_data(1, 1, 5, 5), grid, align_corners=False))


# FGSM
def fgsm_attack(image, epsilon, data_grad):
    sign_data_grad = data_grad.sign()
    perturbed_image = image + epsilon * sign_data_grad
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    return perturbed_image


data = (det_data(2, 16) + 1) / 2
data.requires_grad = True
lin = nn.Linear(16, 3)
det_init(lin)
output = F.log_softmax(lin(data), dim=1)
init_pred = output.max(1, keepdim=True)[1]
loss = F.nll_loss(output, torch.tensor([0, 1]))
lin.zero_grad()
loss.backward()
data_grad = data.grad.data
print(init_pred, fgsm_attack(data, 0.1, data_grad)[0, :4])
# DQN
from collections import namedtuple, deque
import random

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class ReplayMemory(object):
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        self.memory.append(Transition(*args))

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super(DQN, self).__init__()
        self.layer1 = nn.Linear(n_observations, 16)
        self.layer2 = nn.Linear(16, 16)
        self.layer3 = nn.Linear(16, n_actions)

    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


policy_net = DQN(4, 2)
det_init(policy_net)
target_net = DQN(4, 2)
target_net.load_state_dict(policy_net.state_dict())
optimizer = torch.optim.AdamW(policy_net.parameters(), lr=1e-4, amsgrad=True)
memory = ReplayMemory(100)
for i in range(6):
    state = torch.tensor([math.sin(i), math.cos(i), 0.1 * i, -0.2], dtype=torch.float32).unsqueeze(
        0
    )
    with torch.no_grad():
        action = policy_net(state).max(1).indices.view(1, 1)
    nxt = None if i == 5 else state + 0.1
    memory.push(state, action, nxt, torch.tensor([1.0]))
transitions = list(memory.memory)
batch = Transition(*zip(*transitions))
non_final_mask = torch.tensor(
    tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool
)
non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
state_batch = torch.cat(batch.state)
action_batch = torch.cat(batch.action)
reward_batch = torch.cat(batch.reward)
state_action_values = policy_net(state_batch).gather(1, action_batch)
next_state_values = torch.zeros(6)
with torch.no_grad():
    next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
expected_state_action_values = (next_state_values * 0.99) + reward_batch
criterion = nn.SmoothL1Loss()
loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
optimizer.zero_grad()
loss.backward()
torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
optimizer.step()
print(loss, non_final_mask, action_batch.view(-1))
target_net_state_dict = target_net.state_dict()
policy_net_state_dict = policy_net.state_dict()
for key in policy_net_state_dict:
    target_net_state_dict[key] = policy_net_state_dict[key] * 0.005 + target_net_state_dict[key] * (
        1 - 0.005
    )
target_net.load_state_dict(target_net_state_dict)
print(target_net.layer3.bias)


# text classification with EmbeddingBag
class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


m = TextClassificationModel(20, 4, 3)
det_init(m)
text = torch.tensor([1, 2, 3, 4, 5, 6, 7])
offsets = torch.tensor([0, 3, 5])
out = m(text, offsets)
print(out)
label_list, text_list, offsets = [], [], [0]
for _label, _text in [(1, [1, 2]), (0, [3, 4, 5])]:
    label_list.append(_label)
    processed_text = torch.tensor(_text, dtype=torch.int64)
    text_list.append(processed_text)
    offsets.append(processed_text.size(0))
label_list = torch.tensor(label_list, dtype=torch.int64)
offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
text_list = torch.cat(text_list)
print(offsets, text_list, m(text_list, offsets).argmax(1))
# char rnn
n_letters, n_hidden, n_categories = 10, 8, 3


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


rnn = RNN(n_letters, n_hidden, n_categories)
det_init(rnn)


def letterToTensor(i):
    tensor = torch.zeros(1, n_letters)
    tensor[0][i] = 1
    return tensor


hidden = rnn.initHidden()
for i in [1, 4, 2]:
    output, hidden = rnn(letterToTensor(i), hidden)
print(output, output.topk(1))
top_n, top_i = output.topk(1)
print(top_i[0].item())
rnn2 = nn.RNN(n_letters, n_hidden, batch_first=True)
det_init(rnn2)
out, h = rnn2(torch.eye(n_letters)[:3].unsqueeze(0))
print(out.shape, h.shape, h)
lstm = nn.LSTM(4, 3, num_layers=2, bidirectional=True, dropout=0.0)
det_init(lstm)
o, (h, c) = lstm(det_data(5, 2, 4))
print(o.shape, h.shape, c[0])
gru = nn.GRU(4, 3)
det_init(gru)
o, h = gru(det_data(5, 2, 4))
print(h)
print(lstm, gru)
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

seqs = [torch.ones(3, 4), torch.ones(2, 4) * 2, torch.ones(1, 4) * 3]
padded = pad_sequence(seqs, batch_first=True)
print(padded.shape)
packed = pack_padded_sequence(padded, torch.tensor([3, 2, 1]), batch_first=True)
print(packed.batch_sizes, packed.data.shape)
o, (h, c) = nn.LSTM(4, 3, batch_first=True)(packed)
o2, lens = pad_packed_sequence(o, batch_first=True)
print(o2.shape, lens)
packed = pack_padded_sequence(padded, [1, 3, 2], batch_first=True, enforce_sorted=False)
print(packed.sorted_indices, packed.unsorted_indices)
