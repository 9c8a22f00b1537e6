"""The vocabulary and prompts of experiment ``ocr``: names, cities, animals, two relation
tokens, noise tokens and EOS, one-hot in d = vocabulary size (the official layout: relations,
cities, animals, names, noise, EOS).

Name n lives in city n mod cities; city c's animal is animal c mod animals. A fact prompt holds
a name and relation 0 and asks for its city; an implication prompt holds relation 1 and asks for
its animal. With W_K = I and no positional embedding the model sees a prompt only through how
often each token occurs in it, so a prompt is drawn as its token counts (d,): the name, the
relation, EOS and T - 3 noise tokens drawn uniformly.

Every seed draws from its own torch.Generator (streams TRAIN and EVAL), so a seed's prompts never
depend on which other seeds share its batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .config import RELATIONS, Config

TRAIN, EVAL = 0, 1
FACT, IMPL = 0, 1  # the relation tokens


def generator(seed: int, stream: int) -> torch.Generator:
    """An independent generator for (seed, stream), whatever else runs."""
    state = np.random.SeedSequence([seed, stream, 48]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state))


@dataclass(frozen=True)
class Vocab:
    """Token ids of one configuration."""

    cities: torch.Tensor  # (C,)
    animals: torch.Tensor  # (A,)
    names: torch.Tensor  # (N,)
    noise: torch.Tensor  # (K,)
    eos: int
    city_of: torch.Tensor  # (N,) the city token of each name
    animal_of: torch.Tensor  # (N,) the animal token of each name
    train_names: int  # names [0, train_names) have their implications trained

    @property
    def answers(self) -> torch.Tensor:
        """The answer set: every city, then every animal."""
        return torch.cat([self.cities, self.animals])


def vocab(cfg: Config) -> Vocab:
    C, A, N, K = cfg.cities, cfg.animals, cfg.names, cfg.noise
    cities = torch.arange(RELATIONS, RELATIONS + C)
    animals = torch.arange(RELATIONS + C, RELATIONS + C + A)
    names = torch.arange(RELATIONS + C + A, RELATIONS + C + A + N)
    noise = torch.arange(RELATIONS + C + A + N, RELATIONS + C + A + N + K)
    city_index = torch.arange(N) % C
    return Vocab(
        cities, animals, names, noise, cfg.d - 1, cities[city_index],
        animals[city_index % A], cfg.train_names,
    )  # fmt: skip


@dataclass
class Prompts:
    counts: torch.Tensor  # (R, B, d) token counts
    target: torch.Tensor  # (R, B) answer token


def _fill(gen, v: Vocab, cfg: Config, name_idx: torch.Tensor, relation: int, dtype):
    """Counts (B, d) and targets (B,) of prompts for the names ``name_idx`` (B,)."""
    B = len(name_idx)
    noise = v.noise[torch.randint(len(v.noise), (B, cfg.T - 3), generator=gen)]
    name = v.names[name_idx]
    fixed = torch.stack([name, torch.full_like(name, relation), torch.full_like(name, v.eos)], 1)
    tokens = torch.cat([fixed, noise], 1)  # (B, T)
    counts = torch.zeros(B, cfg.d, dtype=dtype).scatter_add_(
        1, tokens, torch.ones(tokens.shape, dtype=dtype)
    )
    target = (v.city_of if relation == FACT else v.animal_of)[name_idx]
    return counts, target


def _names(gen, lo: int, hi: int, B: int) -> torch.Tensor:
    return lo + torch.randint(hi - lo, (B,), generator=gen)


def train_batch(gens: list, v: Vocab, cfg: Config, dtype) -> Prompts:
    """One step's prompts per seed: a third training facts (names with trained implications),
    a third training implications, the rest the held-out names' facts (the official mix)."""
    third = cfg.batch // 3
    N, n_tr = cfg.names, v.train_names
    counts, targets = [], []
    for g in gens:
        parts = [
            _fill(g, v, cfg, _names(g, 0, n_tr, third), FACT, dtype),
            _fill(g, v, cfg, _names(g, 0, n_tr, third), IMPL, dtype),
            _fill(g, v, cfg, _names(g, n_tr, N, cfg.batch - 2 * third), FACT, dtype),
        ]
        counts.append(torch.cat([p[0] for p in parts]))
        targets.append(torch.cat([p[1] for p in parts]))
    return Prompts(torch.stack(counts), torch.stack(targets))


EVAL_SETS = {  # name -> (which names, relation)
    "fact": ("all", FACT),  # every name's fact (all are trained)
    "impl": ("train", IMPL),  # the trained implications
    "heldout": ("heldout", IMPL),  # the held-out names' implications: out-of-context reasoning
}


def eval_sets(gens: list, v: Vocab, cfg: Config, dtype) -> dict[str, Prompts]:
    """Fresh evaluation prompts per seed (its EVAL stream), ``eval_prompts`` of each set."""
    span = {
        "all": (0, cfg.names),
        "train": (0, v.train_names),
        "heldout": (v.train_names, cfg.names),
    }
    out = {}
    for key, (which, relation) in EVAL_SETS.items():
        lo, hi = span[which]
        made = [
            _fill(g, v, cfg, _names(g, lo, hi, cfg.eval_prompts), relation, dtype) for g in gens
        ]
        out[key] = Prompts(torch.stack([m[0] for m in made]), torch.stack([m[1] for m in made]))
    return out
