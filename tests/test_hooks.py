"""The pre-commit hooks of .pre-commit-hooks.yaml, and the GitHub Action in action.yml.

Every hook runs on tests/fixtures/hooks/positive/<hook-id>/ (must pass) and negative/<hook-id>/ (must
fail), the check-jsonschema convention: once with the hook's own entry and args in a subprocess, and
once through the real `pre-commit try-repo` in a throwaway git repository (pre-commit builds the hook's
virtualenv from a snapshot of this checkout; needs `pre-commit` installed and the package index reachable).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HOOKS_FILE = ROOT / ".pre-commit-hooks.yaml"
EXAMPLES = ROOT / "tests" / "fixtures" / "hooks"
HOOKS = yaml.safe_load(HOOKS_FILE.read_text())
HOOK_IDS = [hook["id"] for hook in HOOKS]


def examples(kind: str, hook_id: str) -> list[str]:
    folder = EXAMPLES / kind / hook_id
    return sorted(p.name for p in folder.iterdir() if p.is_file())


def test_manifest_is_a_valid_hook_list():
    assert HOOK_IDS == ["dsconfig-lint"]
    for hook in HOOKS:
        assert {"id", "name", "entry", "language"} <= set(hook)
        assert hook["language"] == "python"
        assert hook["types_or"] == ["json", "yaml"]
        assert hook["minimum_pre_commit_version"] == "2.9.0"  # types_or needs 2.9.0
        assert hook["entry"].split()[0] == "dsconfig"
        assert "--ignore=DS005" in hook.get("args", [])  # quiet on JSON/YAML files that are not configs
        assert (EXAMPLES / "positive" / hook["id"]).is_dir() and (EXAMPLES / "negative" / hook["id"]).is_dir()


def test_manifest_against_pre_commit_schema():
    clientlib = pytest.importorskip("pre_commit.clientlib")
    clientlib.load_manifest(str(HOOKS_FILE))


def _hook_command(hook: dict) -> list[str]:
    entry = shlex.split(hook["entry"])
    # the installed console script may be absent in a source checkout: run the same CLI with -m
    if entry[0] == "dsconfig":
        entry = [sys.executable, "-m", "dsconfig", *entry[1:]]
    return [*entry, *hook.get("args", [])]


@pytest.mark.parametrize("hook", HOOKS, ids=HOOK_IDS)
def test_hook_entry_passes_positive_and_fails_negative_examples(hook):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for kind, expected in (("positive", 0), ("negative", 1)):
        folder = EXAMPLES / kind / hook["id"]
        for name in examples(kind, hook["id"]):
            result = subprocess.run([*_hook_command(hook), name], cwd=folder, capture_output=True, text=True, env=env)
            if kind == "positive":
                assert result.returncode == 0 and result.stdout == "", (name, result.stdout, result.stderr)
            else:
                assert result.returncode == expected, (name, result.stdout, result.stderr)
                assert f"{name}:" in result.stdout
        # and all of the folder at once, as pre-commit passes the staged files
        result = subprocess.run([*_hook_command(hook), *examples(kind, hook["id"])], cwd=folder,
                                capture_output=True, text=True, env=env)
        assert result.returncode == expected, result.stdout + result.stderr


# -- the real pre-commit --------------------------------------------------------------------------------


def _git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=dsconfig tests", "-c", "user.email=tests@dsconfig.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A snapshot of this checkout (tracked and untracked, not ignored files) committed in its own repo, so
    `pre-commit try-repo` builds the hook from the working tree, once for the module."""
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None:
        pytest.skip("git is needed")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    snapshot = tmp_path_factory.mktemp("hook-repo")
    for name in listed.stdout.decode().split("\0"):
        if not name or name.startswith(("tests/", "bench/", ".venv/", "docs/")):
            continue
        source = ROOT / name
        if source.is_file():
            target = snapshot / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _git("init", "-q", cwd=snapshot)
    _git("add", "-A", cwd=snapshot)
    _git("commit", "-q", "-m", "snapshot", cwd=snapshot)
    return snapshot, tmp_path_factory.mktemp("pre-commit-home")


def _try_repo(hook_repo, hook_id: str, kind: str, tmp_path) -> subprocess.CompletedProcess:
    snapshot, home = hook_repo
    work = tmp_path / kind
    shutil.copytree(EXAMPLES / kind / hook_id, work)
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(snapshot), hook_id, "--files",
               *examples(kind, hook_id)]
    return subprocess.run(command, cwd=work, capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.parametrize("hook_id", HOOK_IDS)
def test_pre_commit_try_repo(hook_repo, hook_id, tmp_path):
    passed = _try_repo(hook_repo, hook_id, "positive", tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
    failed = _try_repo(hook_repo, hook_id, "negative", tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Failed" in failed.stdout
    for name in examples("negative", hook_id):
        assert f"{name}:" in failed.stdout  # each bad file is reported, path:line:col
    assert "DS005" not in passed.stdout + failed.stdout


def _readme_block(after: str) -> str:
    """The first fenced YAML block after the line `after` in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(re.escape(after) + r"[^`]*```yaml\n(.*?)```", text, re.S)
    assert match, f"README.md has no YAML block after {after!r}"
    return match.group(1)


def test_readme_pre_commit_snippet_runs_as_written(hook_repo, tmp_path):
    """The README's snippet, with only its repository URL pointed at this checkout's snapshot, tagged with
    the snippet's own `rev` as a release of this repository is."""
    snippet = yaml.safe_load(_readme_block("**pre-commit:**"))
    assert len(snippet) == 1 and snippet[0]["hooks"][0]["id"] in HOOK_IDS
    snapshot, home = hook_repo
    _git("tag", "-f", snippet[0]["rev"], cwd=snapshot)
    work = tmp_path / "project"
    work.mkdir()
    (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{**snippet[0], "repo": str(snapshot)}]}))
    (work / "ds_config.json").write_text('{"train_batch_size": 8.0, "gradient_clipping": 1.0}\n')
    (work / "package.json").write_text('{"name": "web"}\n')
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=work, capture_output=True,
                            text=True, env=env, timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ds_config.json:1:22:" in result.stdout and "DS201" in result.stdout
    assert "package.json" not in result.stdout


def test_readme_and_action_pin_a_tag_of_this_repository():
    """`rev:` and `uses: ...@` name a tag that exists (a clone without tags cannot tell)."""
    if shutil.which("git") is None:
        pytest.skip("git is needed")
    tags = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True)
    if tags.returncode != 0 or not tags.stdout.split():
        pytest.skip("this clone carries no tags")
    rev = yaml.safe_load(_readme_block("**pre-commit:**"))[0]["rev"]
    uses = re.search(r"uses: dsconfig/dsconfig@(\S+)", _readme_block("**GitHub Action**")).group(1)
    assert rev in tags.stdout.split() and uses == rev


# -- the GitHub Action ------------------------------------------------------------------------------------


def test_action_is_a_composite_running_the_github_format():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"args", "version"}
    steps = action["runs"]["steps"]
    assert all(step["shell"] == "bash" for step in steps)
    run = steps[-1]["run"]
    assert "dsconfig lint --format github $DSCONFIG_ARGS" in run and "set -f" in run
    assert steps[-1]["env"]["DSCONFIG_ARGS"] == "${{ inputs.args }}"
    # inputs reach the scripts through the environment, never pasted into them (script injection)
    assert all("${{" not in step["run"] for step in steps)


def test_action_steps_run_in_bash(tmp_path):
    """Run the action's lint step as the runner would, with the args input split the same way."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is needed")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    step = action["runs"]["steps"][-1]
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "dsconfig").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m dsconfig \"$@\"\n")
    (shim / "dsconfig").chmod(0o755)
    config = tmp_path / "configs" / "ds_config.json"
    config.parent.mkdir()
    config.write_text('{"train_batch_size": 8.0, "gradient_clipping": 1.0}')
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
           "DSCONFIG_ARGS": "configs/*.json --no-config --world-size 8"}
    result = subprocess.run([bash, "-e", "-c", step["run"]], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("::error file=configs/ds_config.json,line=1,col=22,title=dsconfig DS201::")
