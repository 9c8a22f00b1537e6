import torch

torch.set_num_threads(1)  # tiny tensors: one thread is fastest (PAPER.md §6.5)
