"""The one-layer attention-only model of experiment ``ocr``, batched over seeds (leading axis R).

One-hot embeddings and unembedding (d = vocabulary), W_K = I fixed, the prediction read at the
last token, EOS. Its query W_Q e_EOS = q (d,) is the only part of W_Q that reaches the output (the
other columns get no gradient), so q is what is trained. The attention of a prompt with token
counts c (d,) is h = q * c (linear, the paper's) or h = softmax(q / sqrt(d) + log c) (softmax:
each position's weight, summed per token); the logits are W_OV h with W_OV = W_O W_V (factorized)
or one matrix (merged), and the loss is the cross-entropy over the whole vocabulary.
"""

from __future__ import annotations

import math

import torch

from .config import OV, Attention, Config, Init


def init_params(cfg: Config, gens: list, dtype) -> dict[str, torch.Tensor]:
    """The trained tensors (R, ...) of each seed: q, and W (merged) or W_O, W_V (factorized)."""
    d, r, s = cfg.d, cfg.width, cfg.scale
    shapes = {"q": (d,)}
    shapes |= {"W": (d, d)} if cfg.ov == OV.merged else {"W_O": (d, r), "W_V": (r, d)}
    if cfg.init == Init.normal:
        out = {k: torch.stack([s * torch.randn(sh, generator=g, dtype=dtype) for g in gens])
               for k, sh in shapes.items()}  # fmt: skip
    else:  # the official start: every entry s, W_V = s I when square (the merged W: W_O I)
        out = {k: torch.full((len(gens), *sh), s, dtype=dtype) for k, sh in shapes.items()}
        if "W_V" in out and r == d:
            out["W_V"] = s * torch.eye(d, dtype=dtype).expand(len(gens), d, d).clone()
    return {k: v.requires_grad_(True) for k, v in out.items()}


def w_ov(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """W_OV (R, d, d): logits = W_OV h."""
    if "W" in params:
        return params["W"]
    return params["W_O"] @ params["W_V"]


def attend(cfg: Config, q: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """h (R, B, d) of prompts with token counts (R, B, d), query q (R, d)."""
    if cfg.attention == Attention.linear:
        return q[:, None, :] * counts
    return torch.softmax(q[:, None, :] / math.sqrt(cfg.d) + counts.log(), dim=-1)


def logits(cfg: Config, params: dict[str, torch.Tensor], counts: torch.Tensor) -> torch.Tensor:
    """(R, B, d): W_OV h, in the factorized model as W_O (W_V h)."""
    h = attend(cfg, params["q"], counts)
    if "W" in params:
        return h @ params["W"].transpose(-1, -2)
    return (h @ params["W_V"].transpose(-1, -2)) @ params["W_O"].transpose(-1, -2)


def cross_entropy(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over prompts (R,) of -log softmax(out)[target]."""
    logp = torch.log_softmax(out, dim=-1)
    return -logp.gather(-1, target[..., None])[..., 0].mean(-1)


def accuracy(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(R,) share of prompts whose argmax over the vocabulary is the answer."""
    return (out.argmax(-1) == target).to(out.dtype).mean(-1)
