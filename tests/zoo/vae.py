"""A variational autoencoder (after PyTorch's examples/vae) on scikit-learn's digits.

The reparameterization noise is drawn once up front with NumPy (as a fixed-noise
batch), so that torch and ferro, whose random streams differ, see the same noise.
A PyTorch script: ``tests/test_zoo.py`` runs it as written on torch and, through
``ferro.compat.as_torch()``, on ferro. ``main`` returns the initial weights and the losses.
"""

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn, optim


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 48)
        self.fc21 = nn.Linear(48, 8)
        self.fc22 = nn.Linear(48, 8)
        self.fc3 = nn.Linear(8, 48)
        self.fc4 = nn.Linear(48, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def main(device="cpu", steps=6, init=None):
    torch.manual_seed(1)
    x = torch.from_numpy((load_digits().data / 16.0).astype(np.float32))
    noise = torch.from_numpy(np.random.default_rng(0).standard_normal((len(x), 8)).astype(np.float32))
    model = VAE().to(device)
    if init is not None:
        model.load_state_dict(init)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    losses = []
    for batch_idx in range(steps):
        data = x[batch_idx * 32:(batch_idx + 1) * 32].to(device)
        eps = noise[batch_idx * 32:(batch_idx + 1) * 32].to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data, eps)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        optimizer.step()
        losses.append(loss.item() / len(data))
    return initial, losses
