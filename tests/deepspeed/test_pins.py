"""Which DeepSpeed release dsconfig replays by default (dsconfig/deepspeed/pins.py): the option, the
setting, the installed distribution, the project's pin, the newest release; constraints are checked
against `packaging` (what pip evaluates them with) and the installed lookup against importlib.metadata."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from dsconfig.deepspeed import pinfiles, pins, specifiers
from dsconfig.deepspeed.pins import Choice, VersionError, choose
from dsconfig.deepspeed.releases import NEWEST, SUPPORTED
from tests.conftest import ROOT


def _holds_deepspeed(entry: str) -> bool:
    try:
        names = os.listdir(entry or ".")
    except OSError:
        return False
    return any(name.lower().startswith("deepspeed-") and name.endswith(("dist-info", "egg-info")) for name in names)


@pytest.fixture
def no_deepspeed():
    """sys.path without the venv's deepspeed 0.19.8: the lookup runs on what is left, like a machine without it.
    `installed()` may add entries meanwhile; all of it is undone afterwards."""
    saved = sys.path[:]
    sys.path[:] = [entry for entry in sys.path if not _holds_deepspeed(entry)]
    importlib.invalidate_caches()
    yield
    sys.path[:] = saved
    importlib.invalidate_caches()


@pytest.fixture
def project(tmp_path, monkeypatch, no_deepspeed):
    """A git repository with a config to lint, as the working directory."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "ds_config.json").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(folder, name: str, text: str | bytes):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def chosen(folder) -> Choice:
    return choose(None, str(folder / "ds_config.json"))


def installed(tmp_path, version: str | None, folder: str | None = None, metadata: str = "METADATA"):
    """A deepspeed distribution on a new first sys.path entry, found by a real lookup (use with `no_deepspeed`)."""
    site = tmp_path / "site"
    info = site / (folder or f"deepspeed-{version}.dist-info")
    info.mkdir(parents=True)
    (info / metadata).write_text("Metadata-Version: 2.1\nName: deepspeed\n"
                                 + (f"Version: {version}\n" if version is not None else "")
                                 + "\nVersion: 9.9.9 in the long description is no header\n")
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()


# -- the option and the setting ------------------------------------------------------------------------------

@pytest.mark.parametrize("value, version", [("0.16.9", "0.16.9"), ("v0.16.9", "0.16.9"), (" 0.14.0 ", "0.14.0"),
                                            ("0.19.8", "0.19.8"), ("0.16.9+cu121", "0.16.9")])
def test_option_names_a_release(value, version):
    assert choose(value, None) == Choice(version, f"--deepspeed-version {version}", "option")


def test_option_all_is_passed_through():
    assert choose("all", None) == Choice("all", "every supported release (--deepspeed-version all)", "option")


@pytest.mark.parametrize("value, message", [
    ("0.13.5", "DeepSpeed 0.13.5 is not supported: dsconfig replays 0.14.0 to 0.19.8"),
    ("0.9.0", "DeepSpeed 0.9.0 is not supported: dsconfig replays 0.14.0 to 0.19.8"),
    ("0.16.10", "DeepSpeed 0.16.10 is not a release: the nearest are 0.16.9 and 0.17.0"),
    ("0.14.6", "DeepSpeed 0.14.6 is not a release: the nearest are 0.14.5 and 0.15.0"),
    ("0.19.9", "DeepSpeed 0.19.9 is not supported yet: the newest release dsconfig replays is 0.19.8"),
    ("1.0.0", "DeepSpeed 1.0.0 is not supported yet: the newest release dsconfig replays is 0.19.8"),
    ("0.16", '"0.16" is not a DeepSpeed version: write one like 0.16.9, or all'),
    ("0.17.2rc1", '"0.17.2rc1" is not a DeepSpeed version: write one like 0.16.9, or all'),
    ("", '"" is not a DeepSpeed version: write one like 0.16.9, or all'),
    ("latest\n", '"latest" is not a DeepSpeed version: write one like 0.16.9, or all'),
])
def test_option_that_is_no_supported_release_is_a_usage_error(value, message):
    with pytest.raises(VersionError) as raised:
        choose(value, None)
    assert str(raised.value) == message


def test_a_huge_option_is_quoted_briefly():
    with pytest.raises(VersionError) as raised:
        choose("9" * 100_000, None)
    assert len(str(raised.value)) < 120 and "\n" not in str(raised.value)


def test_setting_names_the_file_and_errors_say_where():
    assert choose(None, None, settings_value="0.15.1", settings_file="pyproject.toml") == \
        Choice("0.15.1", "deepspeed-version 0.15.1 in pyproject.toml", "settings")
    with pytest.raises(VersionError) as raised:
        choose(None, None, settings_value="0.13.5", settings_file="pyproject.toml")
    assert str(raised.value) == ("pyproject.toml: `deepspeed-version`: DeepSpeed 0.13.5 is not supported: "
                                 "dsconfig replays 0.14.0 to 0.19.8")
    with pytest.raises(VersionError) as raised:  # `deepspeed-version = 0.16` in TOML is a float
        choose(None, None, settings_value=0.16, settings_file=".dsconfig.toml")
    assert str(raised.value) == '.dsconfig.toml: `deepspeed-version`: must be a string such as "0.16.9", or "all" (got 0.16)'


def test_option_beats_setting_beats_installed_beats_pin(project):
    write(project, "requirements.txt", "deepspeed==0.15.2\n")
    installed(project, "0.16.9")
    assert choose("0.14.3", ".", settings_value="0.18.1").version == "0.14.3"
    assert choose(None, ".", settings_value="0.18.1").version == "0.18.1"
    assert choose(None, ".").source == "installed"
    assert choose(None, ".").version == "0.16.9"


# -- the installed distribution ------------------------------------------------------------------------------

def test_the_venvs_deepspeed_is_found():
    assert importlib.metadata.version("deepspeed") == "0.19.8"
    assert choose(None, None) == Choice("0.19.8", "installed deepspeed 0.19.8", "installed")


@pytest.mark.parametrize("version, expected, reason", [
    ("0.16.9", "0.16.9", "installed deepspeed 0.16.9"),
    ("0.16.9+cu121", "0.16.9", "installed deepspeed 0.16.9+cu121 (release 0.16.9)"),
    ("0.17.2.dev0", "0.17.2", "installed deepspeed 0.17.2.dev0 (release 0.17.2)"),
    ("0.16.10+abc", "0.16.9", "installed deepspeed 0.16.10+abc is not a release; using 0.16.9, the one before it"),
    ("0.21.3", "0.19.8", ("installed deepspeed 0.21.3 is newer than 0.19.8, the newest release dsconfig replays; "
                          "using 0.19.8")),
])
def test_installed_version(project, version, expected, reason):
    installed(project, version)
    assert importlib.metadata.version("deepspeed") == version  # the lookup importlib.metadata does
    assert chosen(project) == Choice(expected, reason, "installed")


def test_installed_too_old_falls_through_with_a_note(project):
    installed(project, "0.12.6")
    write(project, "requirements.txt", "deepspeed>=0.10.0,<=0.18.4\n")
    assert chosen(project) == Choice(
        "0.18.4", "installed deepspeed 0.12.6 is older than 0.14.0, the oldest release dsconfig replays; using 0.18.4: "
                  "pinned in requirements.txt:1 (deepspeed>=0.10.0,<=0.18.4; newest allowed)",
        "pin", "requirements.txt", 1)
    (project / "requirements.txt").unlink()
    assert chosen(project) == Choice(
        "0.19.8", "installed deepspeed 0.12.6 is older than 0.14.0, the oldest release dsconfig replays; using 0.19.8: "
                  "newest supported release (no pin found)", "default")


@pytest.mark.parametrize("folder, metadata, version", [
    ("DeepSpeed-0.16.4.dist-info", "METADATA", "0.16.4"),  # names are matched normalised
    ("deepspeed-0.15.1-py3.11.egg-info", "PKG-INFO", "0.15.1"),
    ("deepspeed-0.16.9.dist-info", "METADATA", None),  # no Version header
])
def test_installed_lookup_agrees_with_importlib_metadata(project, folder, metadata, version):
    installed(project, version, folder, metadata)
    assert pins._installed_version() == (importlib.metadata.version("deepspeed") or "")
    if version is None:
        assert chosen(project).reason == ("the installed deepspeed's metadata gives no version; using 0.19.8: "
                                          "newest supported release (no pin found)")


def test_unreadable_metadata_falls_through(project):
    installed(project, "0.16.9")
    (project / "site" / "deepspeed-0.16.9.dist-info" / "METADATA").write_bytes(b"\xff\xfe\x00garbage" * 100)
    write(project, "requirements.txt", "deepspeed==0.15.0\n")
    assert chosen(project).version == "0.15.0"


def test_choose_imports_neither_deepspeed_nor_importlib_metadata(tmp_path):
    """The lint path: the installed version is read from files, not from the package or importlib.metadata
    (its import alone costs about 25 ms)."""
    probe = ("import sys\nfrom dsconfig.deepspeed.pins import choose\nprint(choose(None, '.').version)\n"
             "print(' '.join(sorted(sys.modules)))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    version, modules = result.stdout.splitlines()
    assert version == "0.19.8"
    heavy = {"deepspeed", "torch", "packaging", "importlib.metadata", "yaml", "pydantic"}
    assert not heavy & set(modules.split())


# -- requirements files --------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, version", [
    ("deepspeed>=0.10.0,<=0.18.4", "0.18.4"),
    ("deepspeed>=0.18.6,<0.19.0", "0.18.9"),
    ("deepspeed<0.19", "0.18.9"),
    ("deepspeed==0.19.5", "0.19.5"),
    ("DeepSpeed == 0.17.1", "0.17.1"),
    ("deepspeed===0.15.4", "0.15.4"),
    ("deepspeed==0.16.*", "0.16.9"),
    ("deepspeed~=0.16.2", "0.16.9"),
    ("deepspeed~=0.16", "0.19.8"),
    ("deepspeed!=0.19.8,>=0.19", "0.19.7"),
    ("deepspeed>0.17.6,<0.18.2", "0.18.1"),
    ("deepspeed[autotuning,triton]>=0.14,<0.16 ; sys_platform == 'linux'", "0.15.4"),
    ("deepspeed (>=0.15, <0.17)", "0.16.9"),
    ("deepspeed==0.16.4 --hash=sha256:0123456789abcdef", "0.16.4"),
    ("deepspeed", "0.19.8"),
])
def test_requirement_resolves_to_the_newest_allowed_release(project, line, version):
    write(project, "requirements.txt", f"torch>=2.1\n# deepspeed==0.14.0 is commented out\n{line}  # for ZeRO\n")
    choice = chosen(project)
    assert (choice.version, choice.source, choice.file, choice.line) == (version, "pin", "requirements.txt", 3)
    assert choice.version == str(max(Requirement(line.split(" --")[0]).specifier.filter(SUPPORTED), key=pins.key))


@pytest.mark.parametrize("line, version, reason", [
    ("deepspeed>=0.10.0,<=0.18.4", "0.18.4", "pinned in requirements.txt:1 (deepspeed>=0.10.0,<=0.18.4; newest allowed)"),
    ("deepspeed==0.19.5", "0.19.5", "pinned in requirements.txt:1 (deepspeed==0.19.5)"),
    ("deepspeed", "0.19.8", "pinned in requirements.txt:1 (deepspeed; newest allowed)"),
    ("deepspeed==0.12.6", "0.14.0", ("requirements.txt:1 pins deepspeed==0.12.6, which allows no release dsconfig "
                                     "replays (0.14.0 to 0.19.8); oldest supported release")),
])
def test_reasons_say_how_the_pin_was_read(project, line, version, reason):
    write(project, "requirements.txt", line + "\n")
    assert chosen(project) == Choice(version, reason, "pin", "requirements.txt", 1)


def test_a_pin_that_allows_no_supported_release_falls_back_to_the_newest(project):
    write(project, "requirements.txt", "deepspeed>=0.20\n")
    assert chosen(project).version == NEWEST and "allows no release" in chosen(project).reason


def test_continued_line_and_other_packages(project):
    write(project, "requirements.txt", """
        deepspeed-kernels==0.0.1
        deepspeed_mii==0.3.0
        deepspeed==0.16.4 \\
            --hash=sha256:aaaa \\
            --hash=sha256:bbbb
        """)
    assert (chosen(project).version, chosen(project).line) == ("0.16.4", 3)


def test_includes_and_constraints_are_followed(project):
    write(project, "requirements.txt", "-r requirements/base.txt\n--requirement=extra.txt\n")
    write(project, "requirements/base.txt", "torch\n-c ../constraints.txt\n")
    write(project, "constraints.txt", "numpy<2\ndeepspeed>=0.15,<0.16\n")
    choice = chosen(project)
    assert (choice.version, choice.file, choice.line) == ("0.15.4", "constraints.txt", 2)


def test_requirements_folder_and_other_names(project):
    write(project, "requirements/train.txt", "deepspeed==0.17.3\n")
    assert (chosen(project).version, chosen(project).file) == ("0.17.3", os.path.join("requirements", "train.txt"))
    write(project, "requirements-gpu.txt", "-rrequirements/train.txt\n")
    assert chosen(project).file == os.path.join("requirements", "train.txt")


def test_cyclic_includes_end(project):
    write(project, "requirements.txt", "-r a.txt\n")
    write(project, "a.txt", "-r b.txt\n-r a.txt\n")
    write(project, "b.txt", "-r requirements.txt\n-r a.txt\n")
    assert chosen(project).source == "default"
    write(project, "b.txt", "-r requirements.txt\ndeepspeed<0.15\n")
    assert (chosen(project).version, chosen(project).file) == ("0.14.5", "b.txt")


def test_utf16_requirements_from_powershell(project):
    write(project, "requirements.txt", "torch==2.3.0\r\ndeepspeed==0.14.4\r\n".encode("utf-16"))
    assert (chosen(project).version, chosen(project).line) == ("0.14.4", 2)


@pytest.mark.parametrize("content", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8,
    b"deepspeed==0.16.9\n\xff\xfe\xfd",  # not UTF-8 past the pin: the file is not text, so no pin
    b"deepspeed==" + b"9" * 5000 + b"\n",
    b"deepspeed" + b"[" * 100_000 + b"\n",
    b"deepspeed>=0.14," * 50_000 + b"\n",
    b"-r " + b"x" * 100_000 + b"\n",
])
def test_hostile_requirements_never_raise(project, content):
    write(project, "requirements.txt", content)
    choice = chosen(project)
    assert choice.version in SUPPORTED and choice.source in ("pin", "default")


def test_numbers_too_long_for_int_are_no_versions(project):
    digits = "9" * 5000  # int() refuses more than 4,300 digits
    with pytest.raises(VersionError):
        choose(f"0.16.{digits}", None)
    installed(project, f"0.16.{digits}", folder="deepspeed-0.16.99.dist-info")
    write(project, "uv.lock", f'[[package]]\nname = "deepspeed"\nversion = "0.{digits}"\n')
    write(project, "pyproject.toml", f'[tool.poetry.dependencies]\ndeepspeed = "^{digits}"\n')
    write(project, "requirements.txt", f"deepspeed>=0.{digits}\n")
    choice = chosen(project)
    assert choice.source == "default"
    assert choice.reason.startswith("the installed deepspeed's version \"0.16.999")
    assert len(choice.reason) < 200


def test_huge_requirements_file_is_not_read(project):
    write(project, "requirements.txt", b"deepspeed==0.15.0\n" + b"#" * (pinfiles.LINES_BYTES + 1))
    write(project, "pyproject.toml", '[project]\ndependencies = ["deepspeed==0.14.2"]\n')
    assert chosen(project).version == "0.14.2"


def test_special_files_are_never_opened(project):
    os.mkfifo(project / "requirements.txt")  # reading it would block for ever
    (project / "requirements-dev.txt").mkdir()
    os.symlink("missing.txt", project / "requirements-ci.txt")
    os.symlink("requirements-loop.txt", project / "requirements-loop.txt")
    write(project, "requirements-gpu.txt", "-r /dev/zero\n-r /proc/self/environ\n-r requirements.txt\n")
    assert chosen(project).source == "default"


# -- pyproject.toml, setup.cfg, setup.py ---------------------------------------------------------------------

def test_pyproject_project_dependencies(project):
    write(project, "pyproject.toml", """
        [project]
        name = "trainer"
        dependencies = [
            "torch>=2.1",
            "deepspeed>=0.18.6,<0.19.0",
        ]
        """)
    assert chosen(project) == Choice("0.18.9", "pinned in pyproject.toml:5 (deepspeed>=0.18.6,<0.19.0; newest allowed)",
                                     "pin", "pyproject.toml", 5)


def test_pyproject_optional_dependencies_and_groups(project):
    write(project, "pyproject.toml", """
        [project]
        name = "trainer"

        [project.optional-dependencies]
        train = ["deepspeed[autotuning]~=0.17.1; platform_system == 'Linux'"]
        """)
    assert (chosen(project).version, chosen(project).line) == ("0.17.6", 5)
    write(project, "pyproject.toml", '[dependency-groups]\ngpu = ["deepspeed<0.19"]\n')
    assert (chosen(project).version, chosen(project).line) == ("0.18.9", 2)


@pytest.mark.parametrize("value, version", [
    ('"^0.16.2"', "0.16.9"), ('"~0.15"', "0.15.4"), ('"0.17.4"', "0.17.4"), ('">=0.14 <0.16"', "0.15.4"),
    ('">= 0.14, < 0.16"', "0.15.4"), ('"*"', "0.19.8"), ('"^0.14 || ^0.18"', "0.18.9"),
    ('{ version = "^0.18.2", optional = true }', "0.18.9"),
    ('[{ version = "^0.15", python = "<3.10" }, { version = "^0.17", python = ">=3.10" }]', "0.17.6"),
])
def test_poetry_dependencies(project, value, version):
    write(project, "pyproject.toml", f'[tool.poetry]\nname = "x"\n\n[tool.poetry.dependencies]\n'
                                     f'python = "^3.10"\ndeepspeed = {value}\n')
    choice = chosen(project)
    assert (choice.version, choice.file, choice.line) == (version, "pyproject.toml", 6)


def test_poetry_group(project):
    write(project, "pyproject.toml", '[tool.poetry.group.train.dependencies]\nDeepSpeed = "~0.16.3"\n')
    assert (chosen(project).version, chosen(project).line) == ("0.16.9", 2)


def test_invalid_pyproject_holds_no_pin(project):
    write(project, "pyproject.toml", '[project\ndependencies = ["deepspeed==0.14.1"]\n')
    assert chosen(project).source == "default"
    write(project, "pyproject.toml", "x = " + "[" * 100_000 + '"deepspeed"')
    assert chosen(project).source == "default"


def test_setup_cfg(project):
    write(project, "setup.cfg", """
        [metadata]
        name = trainer

        [options]
        packages = find:
        install_requires =
            torch>=2.1
            # deepspeed==0.14.0 before the ZeRO-3 fix
            deepspeed>=0.15.0,<0.17
        python_requires = >=3.9
        """)
    assert (chosen(project).version, chosen(project).file, chosen(project).line) == ("0.16.9", "setup.cfg", 9)
    write(project, "setup.cfg", "[options.extras_require]\ntrain =\n    deepspeed==0.18.3\n")
    assert (chosen(project).version, chosen(project).line) == ("0.18.3", 3)
    write(project, "setup.cfg", "[metadata]\nname = deepspeed\ndescription = deepspeed==0.18.3\n")
    assert chosen(project).source == "default"


def test_setup_py_literal(project):
    write(project, "setup.py", """
        from setuptools import setup

        setup(
            name="trainer",
            install_requires=["torch", "deepspeed>=0.14,<=0.16.5"],
            extras_require={"deepspeed": ["deepspeed==0.14.2"]},
        )
        """)
    assert (chosen(project).version, chosen(project).line) == ("0.16.5", 5)


def test_setup_py_module_level_list(project):
    write(project, "setup.py", """
        from setuptools import setup
        REQUIRED = [
            "torch",
            "deepspeed~=0.15.0",
        ]
        setup(name="trainer", install_requires=REQUIRED)
        """)
    assert (chosen(project).version, chosen(project).line) == ("0.15.4", 4)


def test_setup_py_is_never_run(project):
    write(project, "setup.py", """
        import pathlib
        pathlib.Path("ran").write_text("setup.py was executed")
        setup(install_requires=open("deps.txt").read().split() + ["deepspeed==0.17.0"])
        """)
    assert chosen(project).source == "default"  # not a literal list
    assert not (project / "ran").exists()


def test_setup_py_compiler_warnings_are_not_shown(project):
    write(project, "setup.py", "x = 1if y else '\\d'\nsetup(install_requires=['deepspeed<0.16'])\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert chosen(project).version == "0.15.4"
    assert [str(warning.message) for warning in caught] == []


@pytest.mark.parametrize("content", [
    "setup(install_requires=['deepspeed==0.14.1'\n",  # not valid Python
    "x = " + "(" * 300 + "'deepspeed'" + ")" * 300,  # nested too deeply for the parser
    "setup(install_requires=['deepspeed==0.14.1'])\x00",
    "setup(install_requires=f'{deepspeed}')",
])
def test_setup_py_that_is_not_python_holds_no_pin(project, content):
    write(project, "setup.py", content)
    assert chosen(project).source == "default"


# -- lock files and conda ------------------------------------------------------------------------------------

UV_LOCK = """
version = 1
requires-python = ">=3.10"

[[package]]
name = "deepspeed"
version = "0.16.7"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "torch" },
]

[[package]]
name = "trainer"
version = "0.1.0"
source = { editable = "." }
dependencies = [
    { name = "deepspeed" },
]

[package.metadata]
requires-dist = [{ name = "deepspeed", specifier = ">=0.14" }]
"""

POETRY_LOCK = """
[[package]]
name = "deepspeed"
version = "0.18.2"
description = "DeepSpeed library"
optional = false
python-versions = "*"
files = [
    {file = "deepspeed-0.18.2.tar.gz", hash = "sha256:0000"},
]
"""


@pytest.mark.parametrize("name, text, version, line", [("uv.lock", UV_LOCK, "0.16.7", 6),
                                                       ("poetry.lock", POETRY_LOCK, "0.18.2", 3)])
def test_lock_wins_over_range(project, name, text, version, line):
    write(project, "pyproject.toml", '[project]\ndependencies = ["deepspeed>=0.14"]\n')
    write(project, name, text)
    assert chosen(project) == Choice(version, f"locked in {name}:{line} (deepspeed {version})", "pin", name, line)


def test_lock_without_deepspeed_leaves_the_range(project):
    write(project, "uv.lock", UV_LOCK.replace('"deepspeed"', '"numpy"'))
    write(project, "requirements.txt", "deepspeed<0.17\n")
    assert chosen(project).version == "0.16.9"


def test_a_locked_package_without_version_takes_none_from_the_next(project):
    write(project, "poetry.lock", '[[package]]\nname = "deepspeed"\n\n[[package]]\nname = "numpy"\nversion = "0.15.0"\n')
    assert chosen(project).source == "default"


def test_hostile_lock_costs_linear_time(project):
    write(project, "uv.lock", '[[package]]\n' + 'name = "deepspeed"\n' * 400_000)
    assert chosen(project).source == "default"


def test_huge_lock_is_not_read(project):
    write(project, "uv.lock", UV_LOCK + "#" * pinfiles.LOCK_BYTES)
    assert chosen(project).source == "default"


def test_conda_environment(project):
    write(project, "environment.yml", """
        name: train
        channels:
          - conda-forge
        dependencies:
          - python=3.11
          - conda-forge::deepspeed=0.16  # conda's "=" is a prefix
          - pip
          - pip:
              - deepspeed==0.14.1
        """)
    assert (chosen(project).version, chosen(project).line) == ("0.16.9", 6)


def test_conda_environment_pip_list(project):
    write(project, "environment.yaml", """
        dependencies:
          - python=3.11
          - pip:
            - torch==2.3.0
            - "deepspeed>=0.17,<0.18"
          - numpy
        """)
    assert (chosen(project).version, chosen(project).line, chosen(project).file) == ("0.17.6", 5, "environment.yaml")


def test_conda_entry_after_the_pip_list(project):
    write(project, "environment.yml", "dependencies:\n  - pip:\n    - torch\n  - deepspeed=0.15\n")
    assert (chosen(project).version, chosen(project).line) == ("0.15.4", 4)


@pytest.mark.parametrize("spec, version", [
    ("=0.16", "0.16.9"), ("=0.16.4=py311h1234_0", "0.16.4"), (" 0.15.3 py_0", "0.15.3"), ("==0.17.1", "0.17.1"),
    (">=0.14,<0.17", "0.16.9"), (" >=0.14, <0.15", "0.14.5"), ("==0.14.1|==0.15.2", "0.15.2"), ("", "0.19.8"),
    ("=0.16.*", "0.16.9"), ("[build=cuda*]", "0.19.8"),
])
def test_conda_match_specs(spec, version):
    constraint = specifiers.conda(spec)
    assert [release for release in SUPPORTED if specifiers.allows(constraint, release)][-1] == version


# -- which pin wins ------------------------------------------------------------------------------------------

def test_nearest_folder_wins(project):
    write(project, "pyproject.toml", '[project]\ndependencies = ["deepspeed==0.14.0"]\n')
    write(project, "train/requirements.txt", "deepspeed==0.17.5\n")
    write(project, "train/configs/ds_config.json", "{}")
    assert choose(None, str(project / "train" / "configs" / "ds_config.json")).version == "0.17.5"
    assert choose(None, str(project / "train" / "configs")).version == "0.17.5"
    assert choose(None, str(project / "other" / "missing.json")).version == "0.14.0"
    assert choose(None, None).version == "0.14.0"  # the working directory


def test_search_stops_at_the_repository_root(tmp_path, monkeypatch, no_deepspeed):
    write(tmp_path, "requirements.txt", "deepspeed==0.14.0\n")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert choose(None, str(tmp_path / "repo" / "ds_config.json")).source == "default"
    assert choose(None, str(tmp_path / "elsewhere" / "ds_config.json")).version == "0.14.0"


def test_a_constraint_beats_a_bare_name_in_the_same_folder(project):
    write(project, "requirements.txt", "deepspeed\n")
    write(project, "setup.py", 'setup(install_requires=["deepspeed<0.16"])\n')
    assert (chosen(project).version, chosen(project).file) == ("0.15.4", "setup.py")


def test_default_when_nothing_is_pinned(project):
    write(project, "requirements.txt", "torch\ntransformers\n")
    assert chosen(project) == Choice(NEWEST, "newest supported release (no installed deepspeed, no pin found)",
                                     "default")


def test_pin_outside_the_working_directory_is_shown_absolute(tmp_path, monkeypatch, no_deepspeed):
    write(tmp_path, "requirements.txt", "deepspeed==0.15.3\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert choose(None, str(tmp_path)).file == str(tmp_path / "requirements.txt")


# -- constraints against packaging (what pip evaluates them with) --------------------------------------------

VERSIONS = ["0.13.5", "0.14", "0.14.0", "0.16.09", "0.15.4", "0.16", "0.16.9", "0.16.10", "0.17.1", "0.18.4", "0.19", "0.19.8",
            "0.20", "1.0", "0.16.*", "0.19.*", "0"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["==", "!=", "<=", ">=", "<", ">", "~=", "==="]),
                          st.sampled_from(VERSIONS)), min_size=1, max_size=3))
def test_specifiers_agree_with_packaging(terms):
    text = ",".join(operator + version for operator, version in terms)
    try:
        oracle = set(SpecifierSet(text).filter(SUPPORTED))
    except InvalidSpecifier:
        return
    assert {release for release in SUPPORTED if specifiers.allows(specifiers.pep440(text), release)} == oracle, text


@pytest.mark.parametrize("text", [
    "deepspeed", "DeepSpeed>=0.14", "deepspeed[autotuning]==0.16.9", "deepspeed (>=0.15,<0.17)",
    "deepspeed>=0.14; python_version >= '3.9'", "deepspeed @ https://example.com/deepspeed/archive/main.tar.gz",
    "deepspeed ~= 0.18.0", "deepspeed!=0.19.8",
])
def test_requirements_agree_with_packaging(text):
    written, constraint = specifiers.requirement(text)
    assert written == text.split(";")[0].strip()
    assert {release for release in SUPPORTED if specifiers.allows(constraint, release)} == \
        set(Requirement(text).specifier.filter(SUPPORTED))


@pytest.mark.parametrize("text, release", [
    ("deepspeed @ git+https://github.com/someone/DeepSpeed.git@v0.16.0", "0.16.0"),
    ("deepspeed@git+https://github.com/deepspeedai/DeepSpeed@v0.15.4#egg=deepspeed", "0.15.4"),
    ("-e git+https://github.com/microsoft/DeepSpeed.git@v0.16.4#egg=deepspeed", "0.16.4"),
    ("git+https://github.com/a-lab/DeepSpeed.git@v0.16.2-lab", "0.16.2"),
    ("deepspeed @ https://example.com/deepspeed-0.16.9.tar.gz", "0.16.9"),
    ("deepspeed @ https://github.com/microsoft/DeepSpeed/archive/refs/tags/v0.16.2.zip", "0.16.2"),
    ("deepspeed @ file:///wheels/deepspeed-0.16.3-py3-none-any.whl", "0.16.3"),
    ("deepspeed @ git+https://github.com/someone/DeepSpeed.git@main", None),
    ("git+https://github.com/microsoft/DeepSpeed.git@5b8a1c2", None),
    ("deepspeed @ git+https://0.16.0:0.16.1@example.com/DeepSpeed.git", None),
])
def test_a_url_pin_is_the_release_its_tag_or_file_names(text, release):
    """pip installs what the URL holds: a release's tag or file is that release (a fork's `v0.16.2-lab` the one it
    started from), a branch or a commit is unknown (every release allowed, the reason says so)."""
    written, constraint = specifiers.requirement(text)
    assert [r for r in SUPPORTED if specifiers.allows(constraint, r)] == ([release] if release else list(SUPPORTED))


def test_a_git_pin_s_reason_says_its_release_is_unknown(project):
    write(project, "requirements.txt", "torch\ndeepspeed @ git+https://github.com/someone/DeepSpeed.git@fork-branch\n")
    choice = chosen(project)
    assert (choice.version, choice.line) == (SUPPORTED[-1], 2)
    assert choice.reason.endswith("a source of unknown release: the newest replayed)"), choice.reason
    write(project, "requirements.txt", "torch\ndeepspeed @ git+https://github.com/someone/DeepSpeed.git@v0.16.0\n")
    assert chosen(project).version == "0.16.0"


@pytest.mark.parametrize("text", ["deepspeed-mii>=0.2", "deepspeed_kernels", "torch", "deepspeed>=x.y", "deepspeed=0.1",
                                  "git+https://github.com/x/deepspeed-mii.git@v0.2.0", "git+https://h/x/o.git@v0.16.0#egg=o"])
def test_not_a_requirement_on_deepspeed(text):
    assert specifiers.requirement(text) is None


# Poetry's documented caret and tilde requirements (python-poetry.org, "Dependency specification").
POETRY = [("^1.2.3", ">=1.2.3,<2.0.0"), ("^1.2", ">=1.2.0,<2.0.0"), ("^1", ">=1.0.0,<2.0.0"),
          ("^0.2.3", ">=0.2.3,<0.3.0"), ("^0.0.3", ">=0.0.3,<0.0.4"), ("^0.0", ">=0.0.0,<0.1.0"),
          ("^0", ">=0.0.0,<1.0.0"), ("~1.2.3", ">=1.2.3,<1.3.0"), ("~1.2", ">=1.2.0,<1.3.0"), ("~1", ">=1.0.0,<2.0.0"),
          ("1.2.*", "==1.2.*"), ("*", ""), (">= 1.2, < 1.5", ">=1.2,<1.5"), ("~=0.16.2", "~=0.16.2")]


@pytest.mark.parametrize("constraint, equivalent", POETRY)
def test_poetry_constraints_match_their_documented_meaning(constraint, equivalent):
    grid = [f"{a}.{b}.{c}" for a in range(3) for b in range(5) for c in range(5)] + list(SUPPORTED)
    parsed = specifiers.poetry(constraint)
    assert [v for v in grid if specifiers.allows(parsed, v)] == list(SpecifierSet(equivalent).filter(grid))


# -- the reading boundary: pins are read only inside the project ---------------------------------------------------


def test_an_include_out_of_the_project_is_not_followed(project):
    """`-r ../outside/requirements.txt` names a file outside the repository: never read, so its line (a token in a
    URL, say) is never shown; the pin search goes on as if the include held nothing."""
    outside = project.parent / f"{project.name}-outside"
    write(outside, "requirements.txt", "deepspeed @ git+https://ghp_TOKEN@example.com/deepspeed.git@v0.16.9\n"
                                        "deepspeed==0.16.9\n")
    write(project, "requirements.txt", f"-r ../{outside.name}/requirements.txt\n")
    assert chosen(project).source == "default"
    os.symlink(outside / "requirements.txt", project / "requirements-link.txt")  # nor through a link
    assert chosen(project).source == "default"
    write(project, "requirements.txt", "-r ci/requirements.txt\n")  # an include inside the project is followed
    write(project, "ci/requirements.txt", "deepspeed==0.15.4\n")
    assert (chosen(project).version, chosen(project).file) == ("0.15.4", os.path.join("ci", "requirements.txt"))


def test_a_url_s_credentials_are_never_shown(project):
    write(project, "requirements.txt", "deepspeed @ git+https://user:ghp_TOKEN@example.com/deepspeed.git\n")
    choice = chosen(project)
    assert "ghp_TOKEN" not in choice.reason and "user" not in choice.reason, choice.reason
    assert "https://***@example.com" in choice.reason


def test_without_a_repository_the_search_stops_at_the_working_directory(tmp_path, monkeypatch, no_deepspeed):
    """No `.git` anywhere: a requirements.txt above the working directory is none of this project's."""
    write(tmp_path, "requirements.txt", "deepspeed==0.15.4\n")
    work = tmp_path / "work"
    write(work, "ds_config.json", "{}\n")
    monkeypatch.chdir(work)
    if any(os.path.exists(os.path.join(parent, ".git")) for parent in [str(p) for p in work.parents]):
        pytest.skip("the temporary folder lies inside a repository here")
    assert chosen(work).source == "default"
    write(work, "requirements.txt", "deepspeed==0.15.4\n")
    assert chosen(work).version == "0.15.4"
