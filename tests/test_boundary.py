"""What dsconfig opens and writes: only the paths it is asked to lint (dsconfig.boundary).

Each case runs the real command in a fresh process with a secret in its environment and in files
outside the linted folder, and checks that no byte of them reaches any output format.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

SECRET = "hunter2-" + "b6f1c0de"  # in the environment and in the files outside the linted tree
DS_CONFIG = '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0}\n'
FORMATS = ("concise", "full", "json", "sarif", "github")


def accelerate_yaml(config_file: str) -> str:
    return ("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 2\n"
            f"deepspeed_config:\n  deepspeed_config_file: {config_file}\n")


def dsconfig(*args: str, cwd, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "DSCONFIG_TEST_SECRET": SECRET}
    return subprocess.run([sys.executable, "-m", "dsconfig", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)


def codes(result) -> list[str]:
    return [finding["code"] for finding in json.loads(result.stdout)]


@pytest.fixture
def tree(tmp_path):
    """tmp/outside/secret.env, tmp/outside/secret.json and tmp/repo/configs (the tree to lint)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.env").write_text(f"TOKEN={SECRET}\n")
    (outside / "secret.json").write_text(json.dumps({"train_batch_size": SECRET, SECRET: 1}) + "\n")
    configs = tmp_path / "repo" / "configs"
    configs.mkdir(parents=True)
    (configs / "ds_config.json").write_text(DS_CONFIG)
    return tmp_path


def never_leaks(*args: str, cwd) -> dict:
    """Lint in every format; the secret appears in none. Returns {format: result}."""
    results = {}
    for output_format in FORMATS:
        result = dsconfig("lint", *args, "--no-config", "--format", output_format, cwd=cwd)
        assert "Traceback" not in result.stderr, result.stderr
        assert SECRET not in result.stdout + result.stderr, (output_format, result.stdout, result.stderr)
        results[output_format] = result
    return results


@pytest.mark.parametrize("named", ["/proc/self/environ", "../../outside/secret.env", "../../outside/secret.json"])
def test_a_yaml_never_makes_dsconfig_read_a_file_outside(tree, named):
    configs = tree / "repo" / "configs"
    (configs / "accelerate_config.yaml").write_text(accelerate_yaml(named))
    results = never_leaks("configs", cwd=tree / "repo")
    found = json.loads(results["json"].stdout)
    refused = [f for f in found if f["file"].endswith("accelerate_config.yaml") and f["code"] in ("DS009", "ACC020")]
    assert refused and refused[0]["pointer"] == "/deepspeed_config/deepspeed_config_file", found
    assert results["json"].returncode == 1  # an error: the launch it describes was not checked


def test_a_symlink_in_the_tree_is_not_followed_out_of_it(tree):
    configs = tree / "repo" / "configs"
    os.symlink(tree / "outside" / "secret.json", configs / "ds_config_link.json")
    os.symlink(tree / "outside", configs / "shared")
    (configs / "accelerate_config.yaml").write_text(accelerate_yaml("shared/secret.json"))
    results = never_leaks("configs", cwd=tree / "repo")
    found = json.loads(results["json"].stdout)
    by_file = {(os.path.basename(f["file"]), f["code"]) for f in found}
    assert ("ds_config_link.json", "DS009") in by_file
    assert not [f for f in found if os.path.basename(f["file"]) == "shared"]  # a folder linked in: passed in silence
    assert ("accelerate_config.yaml", "DS009") in by_file
    assert ("ds_config.json", "DS509") not in by_file  # the real config beside them is still linted, and clean


def test_a_named_link_out_of_the_tree_is_not_followed(tree):
    """The pre-commit hook names each changed file: a link a pull request added is one of them."""
    repo = tree / "repo"
    os.symlink("/proc/self/environ", repo / "ds_config.json")
    os.symlink(tree / "outside" / "secret.json", repo / "zero2.json")
    (repo / "zero3.json").write_text(DS_CONFIG)
    os.symlink("zero3.json", repo / "ds_config_link.json")
    results = never_leaks("ds_config.json", "zero2.json", "ds_config_link.json", cwd=repo)
    found = {(f["file"], f["code"]) for f in json.loads(results["json"].stdout)}
    assert {("ds_config.json", "DS009"), ("zero2.json", "DS009")} <= found
    assert not any(file == "ds_config_link.json" and code == "DS009" for file, code in found)  # inside: linted
    piped = subprocess.run(["bash", "-c", f"{sys.executable} -m dsconfig lint <(cat zero3.json) --no-config"],
                           cwd=repo, capture_output=True, text=True, timeout=60, check=False)
    assert piped.returncode == 0 and "no problems in 1 file" in piped.stderr  # a path written under /dev is read


def test_allow_read_lets_a_named_file_be_read(tree):
    configs = tree / "repo" / "configs"
    shared = tree / "shared"
    shared.mkdir()
    (shared / "zero2.json").write_text('{"train_micro_batch_size_per_gpu": 4, "train_batch_size": 7}\n')
    (configs / "accelerate_config.yaml").write_text(accelerate_yaml("../../shared/zero2.json"))
    refused = dsconfig("lint", "configs", "--no-config", "--format", "json", cwd=tree / "repo")
    assert "DS009" in codes(refused) and "DS202" not in codes(refused)
    allowed = dsconfig("lint", "configs", "--no-config", "--format", "json", "--allow-read", str(shared),
                       cwd=tree / "repo")
    assert "DS009" not in codes(allowed) and "DS202" in codes(allowed)


@pytest.mark.parametrize("settings_file, text", [
    (".dsconfig.toml", 'allow-read = ["../shared", "/"]\n'),
    ("pyproject.toml", '[tool.dsconfig]\nallow-read = ["/"]\n'),
    ("pyproject.toml", 'tool.dsconfig.allow-read = ["/"]\n'),
])
def test_a_repositorys_own_allow_read_never_widens_what_is_read(tree, settings_file, text):
    """The settings come with the repository linted: a pull request's `allow-read = ["/"]` must not let a YAML
    name any file on the CI runner. It is reported, and only --allow-read on the command line widens."""
    configs = tree / "repo" / "configs"
    shared = tree / "shared"
    shared.mkdir()
    (shared / "zero2.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 4, "train_batch_size": 7,
                                                   "registry_token": SECRET}) + "\n")
    (configs / "accelerate_config.yaml").write_text(accelerate_yaml("../../shared/zero2.json"))
    (tree / "repo" / settings_file).write_text(text)
    for output_format in FORMATS:
        configured = dsconfig("lint", "configs", "--format", output_format, cwd=tree / "repo")
        assert SECRET not in configured.stdout + configured.stderr, output_format
        assert "`allow-read` is not honoured" in configured.stderr
    configured = dsconfig("lint", "configs", "--format", "json", cwd=tree / "repo")
    assert "DS009" in codes(configured) and "DS202" not in codes(configured)
    assert configured.returncode == 1


def test_a_json_that_is_no_config_is_never_quoted(tree):
    configs = tree / "repo" / "configs"
    (configs / "credentials.json").write_text(json.dumps({"type": "service_account", "private_key": SECRET}) + "\n")
    (configs / "accelerate_config.yaml").write_text(accelerate_yaml("credentials.json"))
    results = never_leaks("configs/accelerate_config.yaml", cwd=tree / "repo")
    assert "DS009" in codes(results["json"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_are_never_opened(tree):
    configs = tree / "repo" / "configs"
    os.mkfifo(configs / "zero3.json")
    os.mkfifo(configs / "pipe")
    (configs / "accelerate_config.yaml").write_text(accelerate_yaml("pipe"))
    result = dsconfig("lint", "configs", "--no-config", "--format", "json", cwd=tree / "repo", timeout=30)
    found = {(os.path.basename(f["file"]), f["code"]) for f in json.loads(result.stdout)}
    assert ("zero3.json", "DS008") in found and ("accelerate_config.yaml", "ACC020") in found
    assert result.returncode == 1


def test_one_bad_entry_does_not_stop_the_walk(tree):
    configs = tree / "repo" / "configs"
    (configs / "bad.json").write_text('{"train_batch_size": 7.0}\n')
    os.symlink("missing.json", configs / "ds_config_dangling.json")
    os.symlink("loop_b.json", configs / "loop_a.json")
    os.symlink("loop_a.json", configs / "loop_b.json")
    result = dsconfig("lint", "configs", "--no-config", "--format", "json", cwd=tree / "repo")
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    found = {(os.path.basename(f["file"]), f["code"]) for f in json.loads(result.stdout)}
    assert {("ds_config_dangling.json", "DS008"), ("loop_a.json", "DS008"), ("loop_b.json", "DS008")} <= found
    assert any(name == "bad.json" and code != "DS008" for name, code in found)


def test_a_path_longer_than_the_system_allows_is_a_finding(tree):
    configs = tree / "repo" / "configs"
    (configs / "ds_config.json").write_text('{"train_batch_size": 7.0}\n')
    # folders nested past PATH_MAX (4096 on Linux), made one level at a time relative to the last
    name = "d" * 200
    descriptor = os.open(configs, os.O_RDONLY)
    try:
        for _ in range(25):
            os.mkdir(name, dir_fd=descriptor)
            inner = os.open(name, os.O_RDONLY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = inner
        with open(os.open("ds_config.json", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=descriptor), "w") as handle:
            handle.write(DS_CONFIG)
    finally:
        os.close(descriptor)
    result = dsconfig("lint", "configs", "--no-config", "--format", "json", cwd=tree / "repo")
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    found = json.loads(result.stdout)
    assert any(f["code"] == "DS008" and "too long" in f["message"] for f in found), found
    assert any(f["file"] == "configs/ds_config.json" and f["code"] != "DS008" for f in found)
    subprocess.run(["rm", "-rf", str(configs / name)], check=False)  # pytest's cleanup cannot reach that deep


def test_an_unreadable_folder_is_a_finding(tree):
    configs = tree / "repo" / "configs"
    (configs / "private").mkdir()
    (configs / "private" / "ds_config.json").write_text(DS_CONFIG)
    (configs / "bad.json").write_text('{"train_batch_size": 7.0}\n')
    os.chmod(configs / "private", 0)
    try:
        command = [sys.executable, "-m", "dsconfig", "lint", "configs", "--no-config", "--format", "json"]
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("root reads any folder; setpriv is needed to drop that")
            command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]
        result = subprocess.run(command, cwd=tree / "repo", capture_output=True, text=True, timeout=60, check=False)
        if result.returncode == 2 and "ermission" not in result.stderr:
            pytest.skip(f"cannot drop privileges here: {result.stderr.strip()}")
    finally:
        os.chmod(configs / "private", 0o755)
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    found = {(f["file"], f["code"]) for f in json.loads(result.stdout)}
    assert ("configs/private", "DS008") in found
    assert any(file == "configs/bad.json" for file, _ in found)


# -- --fix writes only what it may ------------------------------------------------------------------------

FIXABLE = '{"train_micro_batch_size_per_gpu": 4.0, "gradient_clipping": 1.0}\n'


def test_fix_never_writes_through_a_link_out_of_the_tree(tree):
    outside = tree / "outside"
    (outside / "ds_config.json").write_text(FIXABLE)
    configs = tree / "repo" / "configs"
    os.symlink(outside, configs / "linked")
    (configs / "accelerate_config.yaml").write_text(accelerate_yaml("linked/ds_config.json"))
    (configs / "accelerate_abs.yaml").write_text(accelerate_yaml(str(outside / "ds_config.json")))
    dsconfig("lint", "configs", "--no-config", "--fix", cwd=tree / "repo")
    assert (outside / "ds_config.json").read_text() == FIXABLE


def test_fix_refuses_read_only_and_hard_linked_files(tree):
    configs = tree / "repo" / "configs"
    (configs / "ds_config.json").write_text(FIXABLE)
    (configs / "zero2.json").write_text(FIXABLE)
    os.link(configs / "zero2.json", tree / "outside" / "zero2_copy.json")
    (configs / "zero3.json").write_text(FIXABLE)
    os.chmod(configs / "ds_config.json", stat.S_IRUSR | stat.S_IRGRP)
    result = dsconfig("lint", "configs", "--no-config", "--fix", cwd=tree / "repo")
    assert (configs / "ds_config.json").read_text() == FIXABLE
    assert (configs / "zero2.json").read_text() == FIXABLE == (tree / "outside" / "zero2_copy.json").read_text()
    assert (configs / "zero3.json").read_text() != FIXABLE  # an ordinary file is fixed
    assert "not fixing configs/ds_config.json: read-only" in result.stderr
    assert "not fixing configs/zero2.json: it has 2 hard links" in result.stderr
    diff = dsconfig("lint", "configs/ds_config.json", "--no-config", "--diff", cwd=tree / "repo")
    assert diff.returncode == 1 and "+++ configs/ds_config.json" in diff.stdout  # --diff writes nothing: shown


def test_sigterm_during_a_write_leaves_no_temporary_file(tmp_path):
    """The write is interrupted at its fsync by SIGTERM (as a CI timeout sends it)."""
    target = tmp_path / "ds_config.json"
    target.write_text("{}\n")
    script = ("import os, signal, sys\nfrom dsconfig import files\n"
              "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGTERM)\n"
              "files.write_atomic(sys.argv[1], '{\"train_batch_size\": 8}\\n')\n")
    result = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 128 + 15, result.stderr
    assert sorted(os.listdir(tmp_path)) == ["ds_config.json"] and target.read_text() == "{}\n"


# -- files a launch cannot use -----------------------------------------------------------------------------

def test_deepspeed_config_file_that_is_yaml_or_the_yaml_itself(tmp_path):
    (tmp_path / "zero2.yaml").write_text("train_micro_batch_size_per_gpu: 4\n")
    (tmp_path / "accelerate_config.yaml").write_text(accelerate_yaml("zero2.yaml"))
    (tmp_path / "accelerate_self.yaml").write_text(accelerate_yaml("accelerate_self.yaml"))
    result = dsconfig("lint", ".", "--no-config", "--format", "json", cwd=tmp_path)
    found = [f for f in json.loads(result.stdout) if f["code"] == "ACC020"]
    assert {f["file"] for f in found} == {"./accelerate_config.yaml", "./accelerate_self.yaml"}, result.stdout
    assert all("JSONDecodeError: Expecting value: line 1 column 1 (char 0)" in f["message"] for f in found)


def test_broken_default_config_and_null_root(tmp_path):
    (tmp_path / "default_config.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: [DEEPSPEED\n")
    (tmp_path / "ds_config.json").write_text("null\n")
    result = dsconfig("lint", ".", "--no-config", "--format", "json", cwd=tmp_path)
    found = {(f["file"], f["code"]) for f in json.loads(result.stdout)}
    assert ("./default_config.yaml", "DS000") in found and ("./ds_config.json", "DS004") in found
