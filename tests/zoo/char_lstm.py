"""A small character-level LSTM language model (after PyTorch's examples/word_language_model).

A PyTorch script: ``tests/test_zoo.py`` runs it as written on torch and, through
``ferro.compat.as_torch()``, on ferro. ``main`` returns the initial weights and the losses.
"""

import torch
import torch.nn as nn

TEXT = ("the quick brown fox jumps over the lazy dog. " * 8
        + "pack my box with five dozen liquor jugs! how vexingly quick daft zebras jump.")


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.ntoken = ntoken
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def main(device="cpu", steps=6, init=None):
    torch.manual_seed(0)
    vocab = sorted(set(TEXT))
    ids = torch.tensor([vocab.index(c) for c in TEXT], dtype=torch.long)
    train_data = batchify(ids, 4, device)
    model = RNNModel(len(vocab), 16, 32, 2).to(device)
    if init is not None:
        model.load_state_dict(init)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    criterion = nn.NLLLoss()
    lr, bptt, clip = 2.0, 12, 0.25
    model.train()
    hidden = model.init_hidden(4)
    losses = []
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        if batch == steps:
            break
        data, targets = get_batch(train_data, i, bptt)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    return initial, losses
