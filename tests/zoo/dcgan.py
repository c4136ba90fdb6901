"""A DCGAN (after PyTorch's examples/dcgan) on scikit-learn's 8x8 digits.

The generator's noise is drawn up front with NumPy (as the example's ``fixed_noise``), so that
torch and ferro, whose random streams differ, see the same noise. A PyTorch script:
``tests/test_zoo.py`` runs it as written on torch and, through ``ferro.compat.as_torch()``, on
ferro. ``main`` returns the initial weights of both networks and the losses.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from sklearn.datasets import load_digits

nz, ngf, ndf = 8, 16, 16


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 2, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 1, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def main(device="cpu", steps=5, init=None):
    torch.manual_seed(999)
    images = torch.from_numpy((load_digits().images / 8.0 - 1.0).astype(np.float32)).unsqueeze(1)
    noise_bank = torch.from_numpy(np.random.default_rng(0).standard_normal((steps * 32, nz, 1, 1)).astype(np.float32))
    netG = Generator().to(device)
    netG.apply(weights_init)
    netD = Discriminator().to(device)
    netD.apply(weights_init)
    if init is not None:
        netG.load_state_dict({k[len("netG."):]: v for k, v in init.items() if k.startswith("netG.")})
        netD.load_state_dict({k[len("netD."):]: v for k, v in init.items() if k.startswith("netD.")})
    initial = {**{"netG." + k: v.detach().clone() for k, v in netG.state_dict().items()},
               **{"netD." + k: v.detach().clone() for k, v in netD.state_dict().items()}}
    criterion = nn.BCELoss()
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    losses = []
    for i in range(steps):
        netD.zero_grad()
        real_cpu = images[i * 32:(i + 1) * 32].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        noise = noise_bank[i * 32:(i + 1) * 32].to(device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        losses += [errD.item(), errG.item(), D_x, D_G_z2]
    return initial, losses
