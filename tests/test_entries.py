"""Experiments and data sets are declared objects (``EXPERIMENT = Experiment(...)``,
``DATA_SET = DataSet(...)``) whose fields are checked when they are built: a misspelt, missing
or mistyped field fails at registration with its name, and a module that declares none is
refused with the values the key accepts."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from attnsvm.config import ConfigError
from attnsvm.data import sets
from attnsvm.data.data_set import DataSet
from attnsvm.experiments import builtin_names, entry
from attnsvm.experiments.experiment import Experiment


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


HEAD = """
from attnsvm.experiments.experiment import Experiment


def run_job(run, progress=None):
    return None


def summary_text(runs, seconds):
    return ""
"""


def test_every_built_in_is_an_experiment_and_every_data_set_a_data_set():
    for name in builtin_names():
        assert isinstance(entry(name), Experiment) and entry(name).name == name
        assert entry(name).doc, name  # its package's docstring (python -m attnsvm.run --help)
    for name in sets.names():
        assert isinstance(sets.entry(name), DataSet) and sets.entry(name).name == name


@pytest.mark.parametrize(
    "declaration, field",
    [
        ("name='x', run_job=run_job, summary_txt=summary_text", "summary_txt"),  # misspelt
        ("name='x', run_job=run_job", "summary_text"),  # missing
        ("name='x', run_job=run_job, summary_text=summary_text, reads='dtype'", "reads"),
        ("name='x', run_job=run_job, summary_text=summary_text, Config=dict", "Config"),
        ("name='x', run_job=run_job, summary_text='mod:fn'", "summary_text"),
        # code for a data set it does not declare as its own, and a field no experiment gives
        ("name='x', run_job=run_job, summary_text=summary_text, "
         "data_set_code={'digits': {'instances': run_job}}", "data_set_code"),
        ("name='x', run_job=run_job, summary_text=summary_text, datasets=('digits',), "
         "data_set_code={'digits': {'preflight': run_job}}", "data_set_code"),
    ],
)  # fmt: skip
def test_a_bad_field_fails_at_registration_with_its_name(tmp_path, monkeypatch, declaration, field):
    name = f"mylab_bad_{field.lower()}_{len(declaration)}"
    _module(tmp_path, monkeypatch, name, HEAD + f"\nEXPERIMENT = Experiment({declaration})\n")
    with pytest.raises(ConfigError, match=rf"experiment='{name}' is invalid: .*'?{field}'?"):
        entry(name)


def test_a_misspelt_field_names_the_accepted_fields(tmp_path, monkeypatch):
    name = _module(
        tmp_path,
        monkeypatch,
        "mylab_misspelt",
        HEAD + "\nEXPERIMENT = Experiment(name='x', run_job=run_job, summary_text=summary_text,"
        " fused_unfti='why')\n",
    )
    with pytest.raises(ConfigError) as err:
        entry(name)
    assert "fused_unfti" in str(err.value) and "fused_unfit" in str(err.value)


def test_a_module_without_experiment_is_refused_naming_what_it_lacks(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "mylab_old_protocol", HEAD)  # functions, no EXPERIMENT
    with pytest.raises(ConfigError) as err:
        entry(name)
    text = str(err.value)
    assert f"experiment={name!r} is invalid" in text
    assert "EXPERIMENT = Experiment(...)" in text and "has none" in text
    assert all(n in text for n in builtin_names())  # the accepted values


def test_an_unimportable_experiment_lists_the_accepted_values():
    with pytest.raises(ConfigError, match="accepted values are .*gd.*your own module"):
        entry("mylab_does_not_exist")


def test_a_user_experiment_gets_its_module_docstring(tmp_path, monkeypatch):
    name = _module(
        tmp_path,
        monkeypatch,
        "mylab_doc",
        '"""My own experiment."""\n'
        + HEAD
        + "\nEXPERIMENT = Experiment(name='mine', run_job=run_job, summary_text=summary_text)\n",
    )
    assert entry(name).doc == "My own experiment." and entry(name).group is None


def test_an_experiment_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry("gd").name = "other"


@pytest.mark.parametrize(
    "declaration, field",
    [
        ("instance='m:f'", "instance"),  # misspelt
        ("instances='m.f'", "instances"),  # the dotted form: not a "module:function"
        ("values='yes'", "values"),
        ("order='1'", "order"),
    ],
)
def test_a_bad_data_set_field_fails_at_registration_with_its_name(
    tmp_path, monkeypatch, declaration, field
):
    name = f"mylab_set_{field}_{len(declaration)}"
    body = f"from attnsvm.data.data_set import DataSet\n\nDATA_SET = DataSet({declaration})\n"
    _module(tmp_path, monkeypatch, name, body)
    with pytest.raises(ConfigError, match=rf"data set ramp='{name}' is invalid: .*{field}"):
        sets._declared(name, "ramp")


def test_a_data_set_module_without_data_set_is_refused(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "mylab_set_old", "INSTANCES = 'm:f'\n")
    with pytest.raises(ConfigError, match=r"must declare DATA_SET = DataSet\(\.\.\.\)"):
        sets._declared(name, "ramp")


def test_one_path_syntax_names_its_forms():
    """``"module:function"`` everywhere (config/plugins.py); a config value may still say
    ``"module.function"``; anything else is refused naming the accepted forms."""
    from attnsvm.config.plugins import later, load_object

    assert load_object("attnsvm.config.checks:plain_name", "head.kind")("x") == "x"
    assert load_object("attnsvm.config.checks.plain_name", "head.kind")("x") == "x"
    with pytest.raises(
        ConfigError, match=r"head.kind='plain_name' is invalid: .*'module:function'"
    ):
        load_object("plain_name", "head.kind")
    with pytest.raises(ValueError, match="not a 'module:function' path"):
        later("attnsvm.config.checks.plain_name")
    assert later("attnsvm.config.checks:plain_name")("y") == "y"


def _package(tmp_path, monkeypatch, name: str, modules: dict[str, str]) -> str:
    """A package ``name`` in tmp_path with the modules given (module name -> source)."""
    (tmp_path / name).mkdir()
    for module, body in modules.items():
        (tmp_path / name / f"{module}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


TEMPLATE_ENTRY = """
from attnsvm.experiments.experiment import Experiment

EXPERIMENT = Experiment(name="tmpl", package=__name__)
"""


def test_a_template_package_names_none_of_its_functions(tmp_path, monkeypatch):
    """``package=__name__``: run_job from job.py, summary_text from summary.py, figures from
    plots.py, published from readme_rows.py's SWEEPS; a module it lacks leaves its field None;
    none is imported before its function is called, and each call looks it up again (a patched
    function is seen)."""
    modules = {
        "__init__": TEMPLATE_ENTRY,
        "job": "def run_job(run, progress=None):\n    return ('ran', run)\n",
        "summary": "import sys\nsys.modules['summary_imported'] = sys\n\n\n"
        "def summary_text(runs, seconds):\n    return f'{runs} in {seconds}'\n",
        "plots": "def figures(runs, trajectory, out_dir, sweep=None):\n    return [out_dir]\n",
        "readme_rows": "SWEEPS = ['row']\n",
    }
    name = _package(tmp_path, monkeypatch, "mylab_template", modules)
    import sys

    found = entry(name)
    assert f"{name}.job" not in sys.modules and "summary_imported" not in sys.modules
    assert found.run_job("cfg") == ("ran", "cfg")
    assert found.summary_text(3, 1.5) == "3 in 1.5" and "summary_imported" in sys.modules
    assert found.figures(None, None, "out") == ["out"] and found.published() == ["row"]
    assert found.reanalyse is None and found.bench_cases is None and found.bench_jobs is None
    monkeypatch.setattr(f"{name}.job.run_job", lambda run, progress=None: "patched")
    assert found.run_job("cfg") == "patched"


def test_a_template_package_without_job_py_is_refused_naming_it(tmp_path, monkeypatch):
    modules = {"__init__": TEMPLATE_ENTRY, "summary": "def summary_text(runs, seconds):\n    ...\n"}
    name = _package(tmp_path, monkeypatch, "mylab_template_nojob", modules)
    with pytest.raises(ConfigError, match=rf"run_job.*job\.py's run_job.*{name}\.job defines no"):
        entry(name)


def test_every_built_in_is_laid_out_as_the_template():
    """Each built-in names none of its template functions by hand: they are the functions of
    its job.py, summary.py, plots.py, ... (go-to-definition finds them there), and its own
    config group's class is ``Config`` in config.py."""
    from attnsvm.experiments.experiment import TEMPLATE, Template

    for name in builtin_names():
        found = entry(name)
        assert found.package == f"attnsvm.experiments.{name}", name
        for field in TEMPLATE:
            function = getattr(found, field)
            assert function is None or isinstance(function, Template), (name, field)
        assert isinstance(found.run_job, Template) and isinstance(found.summary_text, Template)
        if found.Config is not None:
            assert found.Config.__name__ == "Config", name
            assert found.Config.__module__ == f"attnsvm.experiments.{name}.config", name


def test_an_experiments_own_data_set_is_drawn_by_that_experiment():
    """dataset=digits' entry declares its keys only; gd declares its draw and resolution, so
    core data names nothing above it, and the draw is gd's through ``data_set_hook``."""
    from attnsvm.data.dataset_config import DatasetConfig, Generator
    from attnsvm.data.generators import make_instances
    from attnsvm.experiments import data_set_hook, dataset_owners

    assert sets.entry("digits").instances is None and sets.entry("digits").resolve is None
    assert dataset_owners()["digits"] == "gd"
    ds = DatasetConfig(generator=Generator.digits, n=4, T=4, d=16)
    with pytest.raises(NotImplementedError, match="dataset=digits is drawn by its own experiment"):
        make_instances(ds, [0])
    inst = make_instances(ds, [0, 1], draw=data_set_hook("digits", "instances"))
    assert inst.X.shape == (2, 4, 4, 16)
    assert data_set_hook("digits", "resolve")(ds) == {"T": 4, "d": 16}
    assert data_set_hook("random", "instances").__doc__.startswith("attnsvm.data.generators:")


def test_the_maxmargin_examples_are_gd_s_own_data():
    """dataset=maxmargin's entry keeps its keys and what it gives (p0, published starts); its
    draw, resolution, rules and sweep-file resolver are gd's (``data_set_code``)."""
    from attnsvm.experiments import data_set_code, data_set_resolvers

    found = sets.entry("maxmargin")
    assert found.instances is None and found.check_run is None and not found.resolvers
    assert found.inits and found.extra == ("p0",)
    assert set(data_set_code("maxmargin")) == {"instances", "resolve", "check_run", "resolvers"}
    assert data_set_resolvers()["maxmargin"]("starts", "single") == 6
