"""An MNIST-style CNN (after PyTorch's classic examples/mnist) on scikit-learn's 8x8 digits.

A PyTorch script: ``tests/test_zoo.py`` runs it as written on torch and, through
``ferro.compat.as_torch()``, on ferro. ``main`` returns the initial weights and the losses.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from sklearn.datasets import load_digits
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.fc1 = nn.Linear(128, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def main(device="cpu", steps=6, init=None, save_model=None):
    use_accel = torch.accelerator.is_available()
    torch.manual_seed(1)
    torch.cuda.manual_seed_all(1)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    kwargs = {"num_workers": 0, "pin_memory": True} if use_accel else {}
    digits = load_digits()
    images = torch.from_numpy((digits.images / 16.0).astype(np.float32)).unsqueeze(1)
    labels = torch.from_numpy(digits.target.astype(np.int64))
    loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=False, **kwargs)
    model = Net().to(device)
    if init is not None:
        model.load_state_dict(init)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.7)
    model.train()
    losses = []
    for batch_idx, (data, target) in enumerate(loader):
        if batch_idx == steps:
            break
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(images[:200].to(device)).argmax(dim=1, keepdim=True)
        correct = pred.eq(labels[:200].to(device).view_as(pred)).sum().item()
    losses.append(float(correct))
    if save_model:
        torch.save(model.state_dict(), save_model)
    return initial, losses
