"""The choices of the run configuration, as enums: Hydra and the dataclasses list their values in
every error (``solver.backend=CLARABELL`` fails at composition naming IPM, CLARABEL, SCS).

A leaf: imports nothing of attnsvm. Which experiments and data sets exist is not written here:
each is an entry its registry finds (attnsvm/experiments/, attnsvm/data/sets/).
"""

from __future__ import annotations

from enum import Enum


class Attention(str, Enum):
    cross = "cross"
    self = "self"
    sequential = "sequential"  # every token is a query (optionally causal)


class Parameterization(str, Enum):
    w = "w"
    kq = "kq"
    p = "p"  # one vector p per seed, logits x~_it^T p with x~ = M x


class Loss(str, Enum):
    """l(u) of the loss (1/n) sum_i l(Y_i f_i)."""

    logistic = "logistic"  # log(1 + e^-u), the paper's
    exponential = "exponential"  # e^-u
    correlation = "correlation"  # -u (the published loss comparison)


class Init(str, Enum):
    torch = "torch"  # nn.Linear's default: U(-1/sqrt(d), 1/sqrt(d)), as the published notebooks
    zeros = "zeros"
    normal = "normal"  # init_scale * N(0, 1)
    cone = "cone"  # c * W^mm_alpha / ||W^mm_alpha|| + noise, alpha locally optimal, not global
    published = "published"  # seed s starts from the data set's s-th published start (its inits)


class Optimizer(str, Enum):
    """Step rules (attnsvm/train/step_rules.py); each is steepest descent in a geometry whose
    SVM norm
    it is conjectured (or proven) to pick (docs/math.md#optimizer-geometry-and-the-svm-norm)."""

    ngd = "ngd"  # the paper's normalized GD: W <- W - lr * g / (||g|| + eps)
    gd = "gd"
    md = "md"  # lp mirror descent, potential ||W||_p^p / p (optimizer.p, optimizer.normalize)
    sign = "sign"  # normalized sign descent W <- W - lr sign(g): the l_inf geometry
    adam = "adam"  # torch.optim.Adam's update (optimizer.betas, optimizer.eps)
    spectral = "spectral"  # W <- W - lr U V^T for g = U S V^T: the spectral-norm geometry
    polyak = "polyak"  # GD with the Polyak step lr * L(W) / ||g||^2
    signum = "signum"  # W <- W - lr sign(m), m a momentum average (optimizer.beta): l_inf
    adamw = "adamw"  # Adam with decoupled weight decay (optimizer.weight_decay): l_inf ball


class Schedule(str, Enum):
    """The learning rate over the steps t = 0, 1, ... (every step rule; docs/geometry.md)."""

    constant = "constant"  # lr at every step
    poly = "poly"  # lr * (t + 2)^(-a), a = optimizer.decay_a (Zhang, Zou, Cao 2024)


class Gradient(str, Enum):
    """How the training gradient is formed (docs/math.md#cancellation-after-saturation)."""

    exact = "exact"  # hand-written, softmax-weighted differences: accurate after saturation
    autograd = "autograd"  # the published notebooks' form (torch.softmax, autograd): loses the
    # masked tokens to cancellation once the softmax saturates; in float32 it is then exactly 0


W_ONLY_OPTIMIZERS = (Optimizer.md, Optimizer.polyak, Optimizer.adamw)  # defined for one matrix W
# (as published; adamw: its limit is a KKT point of a problem in W)


class Backend(str, Enum):
    """Who solves the nuclear-norm SDP; CLARABEL and SCS go through one cvxpy model each."""

    IPM = "IPM"  # attnsvm's batched interior point (nuclear_ipm.py); Clarabel for rare stalls
    CLARABEL = "CLARABEL"
    SCS = "SCS"


class FroMethod(str, Enum):
    nnls = "nnls"  # exact dual (Lawson-Hanson least-distance programming)
    cvxpy = "cvxpy"  # the plain model, for cross-checks


# "lambda" is a keyword, so the enum is built from a mapping; Head["lambda"] is the lambda head
Head = Enum("Head", {"linear": "linear", "relu": "relu", "lambda": "lambda"}, type=str)
Head.__doc__ = "Prediction heads (docs/math.md#the-model): linear, ReLU, lambda (a token mixture)."


class Device(str, Enum):
    cpu = "cpu"
    cuda = "cuda"


class Engine(str, Enum):
    """What trains: the fused C kernel (linear or ReLU head, float64, CPU), torch, or auto (fused
    where it applies). The two agree to rounding error, so the engine is part of the job hash."""

    auto = "auto"
    fused = "fused"
    torch = "torch"


class DType(str, Enum):
    float64 = "float64"
    float32 = "float32"
