"""The script prefilter (dsconfig/training/prefilter.py) never costs a finding: a folder walk that parses only
the scripts where a check can start reports what a walk parsing every script reports. Scripts are composed
from the shapes real projects write batch sizes in (loaders, samplers, config keys, dict literals; values
made by division, float literals, imports, helper functions, or plain attributes), and the two readings are
compared; the text helpers are held to Python's own parser."""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dsconfig import engine
from dsconfig.training import prefilter, pysource, reading
from tests.helpers import options
from tests.training import scripts_fixtures as fx

EXAMPLES = int(os.environ.get("DSCONFIG_PREFILTER_EXAMPLES", "400"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _findings(folder: Path, everything: bool, monkeypatch, **fields) -> set:
    """DS8xx findings of a walk of `folder`; `everything`: every script an entry for every check, imports
    read from the parsed tree (the reading the prefilter must agree with)."""
    with monkeypatch.context() as patch:
        if everything:
            patch.setattr(reading, "starts", lambda *args, **kwargs: prefilter.ALL)
            patch.setattr(pysource.Source, "import_targets", lambda self: sorted(set(self.imports.values())))
        previous = os.getcwd()
        os.chdir(folder)
        try:
            collection = engine.collect(["."])
            opts = options(**fields)._replace(found=collection.found, boundary=collection.boundary)
            result = engine.lint_files(collection.files, opts, None)
        finally:
            os.chdir(previous)
    return {(f.file, f.line, f.column, f.code, f.message) for f in result.findings if f.code.startswith("DS8")}


def _agree(folder: Path, monkeypatch, **fields) -> set:
    shipped = _findings(folder, False, monkeypatch, **fields)
    assert shipped == _findings(folder, True, monkeypatch, **fields)
    return shipped


# -- composed scripts ----------------------------------------------------------------------------------

VALUES = ["bs", "total / 4", "args.batch_size", "BATCH", "get_bs()", "16", "bs // 2", "n", "(total\n    / 4)",
          "cfg['bs']", "float(n)", "2.0", "helpers.size()", "max(n, 1.5)", "int(total / 4)", "bs  # per GPU, 1.5",
          "SIZE", "n * 2", "world.split(total)"]
ASSIGNED = ["total / 4", "32", "args.bs", "BATCH", "get_bs()", "int(total / 4)", "n * 2", "len(data)", "SIZE",
            "cfg.data.batch_size", "1.5", "helpers.size()"]
SINKS = ["loader = DataLoader(ds, batch_size={v})", "loader = DataLoader(ds, {v}, shuffle=True)",
         "sampler = BatchSampler(s, {v}, False)", "cfg['batch_size'] = {v}", "hps.train.batch_size = {v}",
         "self.batch_size = {v}", "config = {{'train_batch_size': {v}, 'lr': 1}}", "loader = MyLoader(data, bs={v})",
         "loader = torch.utils.data.DataLoader(\n    ds,\n    # batch_size=1.5\n    batch_size={v},\n)",
         "log({{'batch_size': {v}}})", "cfg.micro_batch_size_per_gpu = {v}"]
HELPERS = {
    "cfg.py": ["BATCH = 64 / 3\n", "BATCH = 64\n", "BATCH = 64\nSIZE = 1.5\n"],
    "helpers.py": ["def size():\n    return 10 / 4\n", "def size():\n    return 8\n"],
    "world.py": ["def split(total):\n    return total / 2\n", "def split(total):\n    return total // 2\n"],
}


@st.composite
def projects(draw) -> dict[str, str]:
    header = ["import torch", "from torch.utils.data import DataLoader, BatchSampler"]
    header += draw(st.lists(st.sampled_from(["from cfg import BATCH", "from cfg import SIZE", "import helpers",
                                             "import world", "import numpy as np", "from cfg import *"]),
                            max_size=3, unique=True))
    body = [draw(st.sampled_from(["total = 64", "total = len(data)", "", "n = args.n", "n = 3.0"]))]
    body.append(f"bs = {draw(st.sampled_from(ASSIGNED))}")  # always there: the values name them often
    body.append(f"def get_bs():\n    return {draw(st.sampled_from(ASSIGNED))}")
    if draw(st.booleans()):
        body.append("class MyLoader:\n    def __init__(self, data, bs):\n        self.bs = bs")
    sinks = draw(st.lists(st.tuples(st.sampled_from(SINKS), st.sampled_from(VALUES)), min_size=1, max_size=3))
    for sink, value in sinks:
        line = sink.format(v=value)
        if draw(st.booleans()):  # inside a function, as training scripts have it
            line = "def main(args):\n" + textwrap.indent(line, "    ")
        body.append(line)
    files = {"train.py": "\n".join(header + body) + "\n"}
    for name, choices in HELPERS.items():
        files[name] = draw(st.sampled_from(choices))
    return files


@SETTINGS
@given(files=projects())
def test_composed_scripts_find_the_same_with_and_without_the_prefilter(tmp_path_factory, monkeypatch, files):
    folder = tmp_path_factory.mktemp("project")
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    _agree(folder, monkeypatch)


def test_the_composition_finds_float_batch_sizes(tmp_path, monkeypatch):
    """The property above compares something: these shapes are DS801 to both readings."""
    for sink in ("loader = DataLoader(ds, batch_size=bs)", "cfg['batch_size'] = bs", "config = {'bs': bs}",
                 "loader = DataLoader(ds, BATCH)"):
        folder = tmp_path / str(abs(hash(sink)))
        folder.mkdir()
        (folder / "train.py").write_text(f"from torch.utils.data import DataLoader\nfrom cfg import BATCH\n"
                                         f"bs = 64 / 3\n{sink}\n", encoding="utf-8")
        (folder / "cfg.py").write_text("BATCH = 64 / 3\n", encoding="utf-8")
        assert [row[3] for row in _agree(folder, monkeypatch)] == ["DS801"], sink


# -- the shapes of tests/training -------------------------------------------------------------------

@pytest.mark.parametrize("name, files, fields", [
    ("tts", fx.tts_project(), {}),
    ("tts-steps", fx.tts_project(), {"dataset_size": 1000, "world_sizes": (1, 2, 3)}),
    ("semantic", fx.semantic_project(), {}),
    ("webui-float", {"webui.py": fx.WEBUI_FLOAT}, {}),
    ("webui-int", {"webui.py": fx.WEBUI_INT}, {}),
    ("jax", fx.jax_project(batch=4), {"world_sizes": (8,)}),
    ("jax-batchnorm", fx.jax_project(batch=8, model=fx.TORCH_BATCHNORM_MODEL), {"world_sizes": (8,),
                                                                              "batchnorm": True}),
])
def test_fixture_projects_find_the_same(tmp_path, monkeypatch, name, files, fields):
    fx.write(tmp_path, files)
    _agree(tmp_path, monkeypatch, **fields)


def test_a_lightning_trainer_without_a_sharding_loader_is_not_parsed(tmp_path, monkeypatch):
    """DS800 looks for a loader among the imports (read from the text) before parsing the script."""
    fx.write(tmp_path, {"train.py": "import lightning.pytorch as pl\nfrom data import make\n"
                                    "trainer = pl.Trainer(devices=8)\ntrainer.fit(model, make())\n",
                        "data.py": "from torch.utils.data import DataLoader\ndef make():\n"
                                   "    return DataLoader(ds, batch_size=8)\n"})
    parsed = []
    original = pysource.parse
    monkeypatch.setattr(pysource, "parse", lambda text, path: parsed.append(path) or original(text, path))
    assert _findings(tmp_path, False, monkeypatch) == set()
    assert parsed == []


# -- the text helpers against Python's parser ----------------------------------------------------------

@pytest.mark.parametrize("text, arguments", [
    ("f(a, b=1)", [(None, "a"), ("b", "1")]),
    ("f(x, batch_size=args.bs,  # per GPU\n  shuffle=True)", [(None, "x"), ("batch_size", "args.bs"),
                                                             ("shuffle", "True")]),
    ("f('a, b', g(1, 2), [3, 4], **kw)", [(None, "'a, b'"), (None, "g(1, 2)"), (None, "[3, 4]"), ("**", "kw")]),
    ("f(*args, n == 2)", [("*", "*args"), (None, "n == 2")]),
    ("f(a\\\n, b)", [(None, "a"), (None, "b")]),
    ('f("""x)\n""", y)', [(None, '"""x)\n"""'), (None, "y")]),
])
def test_call_arguments_split_as_python_does(text, arguments):
    assert prefilter.call_arguments(text, text.index("(")) == arguments
    call = ast.parse(text).body[0].value  # the same number of arguments to Python
    assert len(call.args) + len(call.keywords) == len(arguments)


def test_call_arguments_give_up_on_what_they_cannot_read():
    assert prefilter.call_arguments("f(a, b", 1) is None  # never closes
    assert prefilter.call_arguments("f(a]", 1) is None  # unbalanced
    assert prefilter.call_arguments("f(" + "a, " * 3000 + ")", 1) is None  # past the scan limit


@pytest.mark.parametrize("text", [
    "import os, sys as system\nfrom . import sibling\nfrom ..pkg.mod import (a,\n    b as c)\n",
    "import a.b.c\nimport a.b as ab\nfrom x import *\nfrom .y import z  # trailing\n",
    'def f():\n    import inside\n"""\nimport not_code\n"""\ntry:\n    from opt import thing\nexcept ImportError:\n    pass\n',
    "from \\\n    pkg import name\n",
])
def test_text_imports_are_the_parsed_ones(text):
    assert pysource.text_imports(text) == set(pysource.Source("m.py", text, ast.parse(text), "/m.py").imports.values())


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.sampled_from(["import a", "import a.b", "import a.b as c", "from a import b", "from . import b",
                                 "from .a import b as c", "from ..a.b import (c,\n d)", "x = 'import q'",
                                 "# import r", "def f():\n    import s", "from a import *", "import a, b.c"]),
                max_size=6))
def test_composed_imports_are_the_parsed_ones(lines):
    """The same targets; where two imports bind one name (the parsed table keeps one) the text keeps both."""
    text = "\n".join(lines) + "\n"
    tree = ast.parse(text)
    parsed = set(pysource.Source("m.py", text, tree, "/m.py").imports.values())
    bound = [alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names if alias.name != "*"]
    if len(bound) == len(set(bound)):
        assert pysource.text_imports(text) == parsed
    else:
        assert pysource.text_imports(text) >= parsed


@pytest.mark.parametrize("text", [
    "x = " + "Loader(" * 30000,  # never closes
    "from torch.utils.data import DataLoader\n" + "".join(f"l{i} = DataLoader(d, batch_size=b{i})\n" for i in range(2000)),
    "".join(f"cfg.batch_size = v{i} + w{i}\n" for i in range(2000)),
])
def test_a_file_too_tangled_to_read_cheaply_is_parsed(text):
    """Past _MAX_SITES places or _MAX_NAMES names the prefilter stops reading and leaves the file to the parser."""
    assert "DS801" in prefilter.starts(text, False, steps=False, local=frozenset())


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(["DataLoader", "torch.utils.data.DataLoader", "DL", "Loader", "DataLoaderX"]),
       gap=st.sampled_from(["", " ", "\n    "]), keyword=st.sampled_from(["sampler", "batch_sampler", "samplers",
                                                                         "my_sampler", "shuffle"]),
       between=st.sampled_from(["=", " = ", "  # see below\n    =", "\n    ="]),
       first=st.sampled_from(["", "dataset, ", "dataset, batch_size=8, "]))
def test_the_loader_text_test_passes_every_loader_given_a_sampler(name, gap, keyword, between, first):
    """The text test before a module is parsed for DataLoader(..., sampler=...) (training/scripts.py) is false
    only when the parsed module has no such call, whatever spaces, lines and comments the call is written with."""
    from dsconfig.training.scripts import _may_give_a_loader_a_sampler
    text = f"import torch\nloader = ({name}{gap}({first}{keyword}{between}s))\n"
    tree = ast.parse(text)
    has = any(isinstance(node, ast.Call) and (node.func.attr if isinstance(node.func, ast.Attribute) else
                                                 getattr(node.func, "id", "")) == "DataLoader"
              and any(k.arg in ("sampler", "batch_sampler") for k in node.keywords) for node in ast.walk(tree))
    assert _may_give_a_loader_a_sampler(text) or not has, text
