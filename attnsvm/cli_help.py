"""The header of ``python -m attnsvm.run --help``: what attnsvm is, its experiments and sweeps.

Nothing here is written by hand per experiment: the experiments come from the registry (the
first sentence of each entry package's docstring) and the sweeps from the shipped sweep files,
so the help never lists what is gone nor misses what was added. conf/hydra/help/attnsvm.yaml
puts this text above Hydra's list of groups and the composed config.
"""

from __future__ import annotations

import re
import textwrap
from importlib.resources import files

from attnsvm.config.schema import CONF_MODULE
from attnsvm.experiments import builtin_names, default_name, entry

WIDTH = 100
INTRO = (
    "attnsvm: a one-layer softmax attention trained by gradient descent against the attention "
    "SVMs it converges to in direction (Tarzanagh et al. 2023) and the follow-ups of that "
    "line of work. One job = one config point x `seeds` seeds; any key below can be set."
)
# a sentence ends at . ? ! before a space, except in "s.t.", "e.g.", "i.e.", "et al."
_SENTENCE = re.compile(r"(?<!s\.t\.)(?<!e\.g\.)(?<!i\.e\.)(?<!al\.)(?<=[.?!])\s")
_FILE_NOTE = re.compile(r"\s*\([^()]*\.(py|md)\b[^()]*\)(?=[.?!]?$)")  # "(job.py)" at the end


def summary_line(name: str) -> str:
    """The first sentence of experiment ``name``'s docstring, without its ``experiment=NAME:``
    prefix or reST quotes."""
    doc = " ".join(entry(name).doc.split("\n\n")[0].split())
    first = _SENTENCE.split(doc, maxsplit=1)[0].replace("``", "")
    first = _FILE_NOTE.sub("", re.sub(rf"^[^:]*\b{re.escape(name)}\b[^:]*:\s*", "", first))
    return first[:1].upper() + first[1:]


def sweep_names() -> list[str]:
    """The sweep files shipped in conf/sweeps/ (``+sweeps=NAME``)."""
    folder = files(CONF_MODULE) / "sweeps"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _wrapped(text: str, indent: str = "", hang: int = 4) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=" " * hang)


def _commands() -> list[tuple[str, str]]:
    run = "python -m attnsvm.run"
    return [
        (run, f"the default job (experiment={default_name()})"),
        (f"{run} experiment=NAME KEY=VALUE ...", "one job"),
        (f"{run} -m dataset.d=2,4,8 parameterization=w,kq", "an ad-hoc sweep"),
        (f"{run} -m +sweeps=SWEEP", "a sweep file; it resumes"),
        ("python -m attnsvm.aggregate outputs/sweeps/SWEEP", "its tables and figures"),
        ("python -m attnsvm.report outputs/sweeps/SWEEP --watch", "its page, kept current"),
        ("python -m attnsvm.reanalyse DIR KEY=VALUE --out NEW", "new SVMs, no training"),
    ]


def header() -> str:
    """The help's header; ``$`` doubled for the string.Template that Hydra renders it with."""
    names = sorted(builtin_names())
    width = max(map(len, names))
    lines = [
        textwrap.fill(INTRO, WIDTH),
        "",
        "Experiments (python -m attnsvm.run experiment=NAME):",
    ]
    lines += [_wrapped(f"{n:<{width}}  {summary_line(n)}", "  ", width + 4) for n in names]
    lines += [
        "",
        "Commands:",
        *(f"  {cmd:<64}# {what}" for cmd, what in _commands()),
        "",
        _wrapped("Sweeps (+sweeps=SWEEP): " + ", ".join(sweep_names())),
        "",
        _wrapped(
            "Documentation: README.md and docs/ (docs/configuration.md: every group and key; "
            "docs/experiments.md: what each experiment measures).",
            hang=0,
        ),
    ]
    return "\n".join(lines).replace("$", "$$")
