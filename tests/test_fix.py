"""`--fix` and `--diff`: text edits at the recorded positions, safe vs unsafe, a fixpoint, atomic writes,
and the round-trip property (hypothesis over generated configs, and the corpus when it is there):
after fixing, the file reads as the same data except the fixed values, and no safe fix is left."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig import engine, fix
from dsconfig.cli import cli
from dsconfig.document import JsonDocument
from dsconfig.findings import Finding
from dsconfig.pointers import pointer_tokens
from dsconfig.rules import RULES
from dsconfig.rules.rule import SAFE, UNSAFE

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT / "tests" / "fixtures" / "formats"
GOLDEN = ROOT / "tests" / "golden"


def lint(*args, input=None):
    return CliRunner().invoke(cli, ["lint", "--no-config", *args], catch_exceptions=False, input=input)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


# -- the safety table ----------------------------------------------------------------------------------


def test_every_policy_says_why():
    for code, rule in RULES.items():
        policy = rule.autofix
        if policy is None:
            continue
        assert policy.applicability in (SAFE, UNSAFE) and policy.why.endswith("."), code
        assert (policy.unless is None) == (policy.demoted_when is None), code
        assert policy.demoted_when is None or policy.applicability == SAFE, code
    assert RULES["DS201"].fix_safety == "safe" and RULES["DS202"].fix_safety == "unsafe"
    assert RULES["DS410"].fix_safety == "unsafe"  # quoted booleans: DeepSpeed reads "false" as true
    assert RULES["DS400"].fix_safety == "none"


def test_safe_set():
    safe = {code for code, rule in RULES.items() if rule.fix_safety == SAFE}
    assert safe == {"DS006", "DS103", "DS104", "DS106", "DS112", "DS201", "DS300", "DS401", "ACC005", "ACC016"}


def _plan(text, code, pointer, replacement, on_key=False, name="ds_config.json"):
    doc = engine.open_document(text, name, engine.Options())
    return fix.plan(Finding(RULES[code], "m", pointer, fix=replacement, on_key=on_key), doc)


def test_plans_for_json_values_keys_and_insertions():
    text = '{\n  "train_batch_size": 8.0,\n  "bfloat16": {"enabled": true}\n}\n'
    info = _plan(text, "DS201", "/train_batch_size", "8")
    assert info.kind == "replace" and info.safe and text[info.edit.start:info.edit.end] == "8.0"
    info = _plan(text, "DS401", "/bfloat16", '"bf16"', on_key=True)
    assert info.kind == "rename" and info.safe and info.touched == "/bf16" and info.edit.text == '"bf16"'
    info = _plan(text, "DS308", "/zero_force_ds_cpu_optimizer", "false")
    assert info.kind == "insert" and not info.safe
    assert fix.apply_edits(text, [info.edit]) == ('{\n  "train_batch_size": 8.0,\n  "bfloat16": {"enabled": true},\n'
                                                  '  "zero_force_ds_cpu_optimizer": false\n}\n')
    info = _plan('{"a": {"b": 1}}', "DS308", "/a/c", "false")
    assert fix.apply_edits('{"a": {"b": 1}}', [info.edit]) == '{"a": {"b": 1, "c": false}}'
    info = _plan('{"a": {}}', "DS308", "/a/c", "false")
    assert fix.apply_edits('{"a": {}}', [info.edit]) == '{"a": {"c": false}}'


def test_a_rename_onto_an_existing_key_has_no_edit():
    info = _plan('{"bf16": {}, "bfloat16": {}}', "DS401", "/bfloat16", '"bf16"', on_key=True)
    assert info.edit is None


@pytest.mark.parametrize("code,pointer,written,replacement,safe", [
    ("DS201", "/train_batch_size", "8.0", "8", True),
    ("DS201", "/train_batch_size", '"8"', "8", True),
    ("DS201", "/train_batch_size", "true", "1", False),  # which number was meant?
    ("DS103", "/zero_optimization/offload_optimizer/device", '"CPU"', '"cpu"', True),
    ("DS103", "/zero_optimization/offload_optimizer/device", '"gpu"', '"cpu"', False),  # a guess
    ("DS104", "/zero_optimization/stage3_gather_fp16_weights_on_model_save", "true",
     '"gather_16bit_weights_on_model_save"', True),
    ("DS104", "/zero_optimization/cpu_offload", "true", '"offload_optimizer"', False),  # migrated value
    ("DS410", "/fp16/enabled", '"false"', "false", False),
])
def test_safety_per_finding(code, pointer, written, replacement, safe):
    tokens = pointer_tokens(pointer)
    text = written
    for token in reversed(tokens):
        text = "{" + json.dumps(token) + ": " + text + "}"
    info = _plan(text, code, pointer, replacement, on_key=code == "DS104")
    assert info.edit is not None and info.safe is safe


def test_zero_optimization_boolean_with_allgather_size_is_unsafe():
    assert _plan('{"zero_optimization": false}', "DS300", "/zero_optimization", '{"stage": 0}').safe
    assert not _plan('{"zero_optimization": true, "allgather_size": 4}', "DS300", "/zero_optimization",
                     '{"stage": 1}').safe


def test_yaml_edits_keep_plain_scalars_plain_and_quote_yaml11_words():
    text = "compute_environment: LOCAL_MACHINE\ndistributed_type: NO  # single\nmixed_precision: 'FP16'\n"
    info = _plan(text, "ACC016", "/distributed_type", '"NO"', name="accelerate_config.yaml")
    assert fix.apply_edits(text, [info.edit]).splitlines()[1] == 'distributed_type: "NO"  # single'
    info = _plan(text, "ACC005", "/compute_environment", '"LOCAL"', name="accelerate_config.yaml")
    assert info.edit.text == "LOCAL"  # plain stays plain
    info = _plan(text, "ACC019", "/mixed_precision", '"fp16"', name="accelerate_config.yaml")
    assert info.edit.text == "'fp16'"  # single-quoted stays single-quoted
    info = _plan(text, "ACC002", "/mixed_precision", '"mixed"', on_key=True, name="accelerate_config.yaml")
    assert fix.apply_edits(text, [info.edit]).splitlines()[2] == "mixed: 'FP16'"


def test_edits_map_onto_crlf_text():
    raw = '{\r\n  "a": 8.0,\r\n  "b": 1\r\n}\r\n'
    doc = JsonDocument("x.json", engine.decode(raw.encode()))
    span = doc.scan.spans["/b"]
    out = fix.apply_edits(raw, [fix.Edit(span.start, span.end, "2"), fix.Edit(span.end, span.end, ',\n  "c": 3')])
    assert out == '{\r\n  "a": 8.0,\r\n  "b": 2,\r\n  "c": 3\r\n}\r\n'


# -- the command line ----------------------------------------------------------------------------------


BROKEN = ('{\n\t"train_micro_batch_size_per_gpu": 32.0,\n  "gradient_accumulation_steps": "2",\n'
          '  "gradient_clipping": 1.0,\n  "bfloat16": {"enabled": true},\n  "zero_optimization": {\n'
          '    "stage": 2,   "offload_optimizer": {"device": "CPU"},\n    "overlap_comm": "true"\n  },\n'
          '  "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}\n}\n')
FIXED = ('{\n\t"train_micro_batch_size_per_gpu": 32,\n  "gradient_accumulation_steps": 2,\n'
         '  "gradient_clipping": 1.0,\n  "bf16": {"enabled": true},\n  "zero_optimization": {\n'
         '    "stage": 2,   "offload_optimizer": {"device": "cpu"},\n    "overlap_comm": true\n  },\n'
         '  "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}\n}\n')


def test_fix_writes_safe_fixes_and_keeps_every_other_byte(tmp_path):
    path = write(tmp_path, "ds_config.json", BROKEN)
    result = lint(str(path), "--fix")
    assert path.read_text() == FIXED
    assert result.stderr.startswith("fixed 5 problems in 1 file")
    assert result.exit_code == 0, result.output  # nothing at error level is left
    assert lint(str(path), "--diff").exit_code == 0  # a fixpoint: nothing more to do


def test_comments_survive(tmp_path):
    """hjson comments (DeepSpeed's loader reads them) stay where they are."""
    text = '{\n  // bf16 on A100\n  "bfloat16": {"enabled": true}, /* inline */ "gradient_clipping": 1.0\n}\n'
    path = write(tmp_path, "ds_config.json", text)
    lint(str(path), "--fix")
    assert path.read_text() == text.replace('"bfloat16"', '"bf16"')


def test_fixpoint_applies_overlapping_fixes_in_later_passes(tmp_path):
    """DS201 (32.0 -> 32) and DS202 (-> 16 at world size 4) edit the same value: one per pass."""
    path = write(tmp_path, "ds_config.json", '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 32.0, '
                                             '"gradient_clipping": 1.0}')
    run = fix.run([str(path)], engine.Options(world_sizes=(4,)), keep=lambda f: True, unsafe=True)
    result = next(iter(run.files.values()))
    assert [(f.code, f.fix) for f, _ in result.applied] == [("DS201", "32"), ("DS202", "16")]
    assert result.text == '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 16, "gradient_clipping": 1.0}'
    assert not [f for f in run.findings if f.code in ("DS201", "DS202")]


def test_fixes_inside_a_renamed_block_apply_in_the_same_run(tmp_path):
    path = write(tmp_path, "ds_config.json", '{"train_batch_size": 8, "gradient_clipping": 1.0, '
                                             '"bfloat16": {"enabled": true, "immediate_grad_update": "true"}}')
    lint(str(path), "--fix")
    assert path.read_text() == ('{"train_batch_size": 8, "gradient_clipping": 1.0, '
                                '"bf16": {"enabled": true, "immediate_grad_update": true}}')


def test_diff_prints_and_writes_nothing(tmp_path):
    path = write(tmp_path, "ds_config.json", BROKEN)
    before = path.stat()
    result = lint(str(path), "--diff")
    assert result.exit_code == 1 and path.read_text() == BROKEN and path.stat().st_mtime_ns == before.st_mtime_ns
    assert result.stdout.startswith(f"--- {path}\n+++ {path}\n@@ ")
    assert '\n-\t"train_micro_batch_size_per_gpu": 32.0,\n' in result.stdout
    assert '\n+\t"train_micro_batch_size_per_gpu": 32,\n' in result.stdout
    assert result.stderr.strip() == "would fix 5 problems in 1 file"
    clean = write(tmp_path, "ds_clean.json", '{"train_batch_size": 8, "gradient_clipping": 1.0}')
    result = lint(str(clean), "--diff")
    assert result.exit_code == 0 and result.stdout == ""


def test_golden_diff():
    os.chdir(FORMATS)
    try:
        result = lint("ds_config.json", "accelerate_config.yaml", "--world-size", "4", "--diff")
    finally:
        os.chdir(ROOT)
    assert result.exit_code == 1
    from tests.test_formats import check_golden
    check_golden("lint.diff", result.stdout)


def test_unsafe_fixes_need_the_flag(tmp_path):
    text = '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 32, "gradient_clipping": 1.0}'
    path = write(tmp_path, "ds_config.json", text)
    assert lint(str(path), "--world-size", "4", "--fix").exit_code == 1 and path.read_text() == text
    result = lint(str(path), "--world-size", "4", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0 and '"train_micro_batch_size_per_gpu": 16' in path.read_text()
    assert lint(str(path), "--unsafe-fixes").exit_code == 2  # needs --fix or --diff


def test_a_harmful_fix_is_not_applied_even_when_unsafe_fixes_are_allowed(tmp_path):
    text = '{"train_batch_size": 8, "gradient_clipping": 1.0, "zero_optimization": {"stage": 2, "cpu_offload": true}}'
    path = write(tmp_path, "ds_config.json", text)
    lint(str(path), "--fix", "--unsafe-fixes")
    assert '"cpu_offload": true' in path.read_text()  # offload_optimizer: true would be rejected


def test_ignored_and_suppressed_findings_are_not_fixed(tmp_path, monkeypatch):
    path = write(tmp_path, "ds_config.json", '{"train_batch_size": 8.0, "bfloat16": {}, "gradient_clipping": 1.0}')
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(cli, ["lint", "ds_config.json", "--fix", "--ignore", "DS401", "--no-config"])
    assert path.read_text() == '{"train_batch_size": 8, "bfloat16": {}, "gradient_clipping": 1.0}'
    (tmp_path / ".dsconfig.toml").write_text('[[suppress]]\nfiles = "*.json"\npointer = "/train_batch_size"\n'
                                             'rules = ["DS201"]\nreason = "r"\n')
    path.write_text('{"train_batch_size": 8.0, "gradient_clipping": 1.0}')
    CliRunner().invoke(cli, ["lint", "ds_config.json", "--fix"])
    assert path.read_text() == '{"train_batch_size": 8.0, "gradient_clipping": 1.0}'


def test_stdin_fix_prints_the_fixed_text(tmp_path):
    result = lint("-", "--fix", "--stdin-filename", "ds_config.json", input=BROKEN)
    assert result.stdout == FIXED
    assert "fixed 5 problems" in result.stderr and result.exit_code == 0
    result = lint("-", "--diff", "--stdin-filename", "ds_config.json", input=BROKEN)
    assert result.exit_code == 1 and result.stdout.startswith("--- ds_config.json\n")


def test_paired_files_are_fixed_each_in_its_own_file(tmp_path):
    write(tmp_path, "ds_config.json", '{\n  "train_micro_batch_size_per_gpu": 8.0,\n  "gradient_clipping": 1.0,\n'
                                      '  "zero_optimization": {"stage": 2}\n}\n')
    yaml_path = write(tmp_path, "accelerate_config.yaml",
                      "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
                      "  deepspeed_config_file: ds_config.json\n  zero3_init_flag: false\nmixed_precision: 'no'\n"
                      "num_machines: 1\nnum_processes: 2\n")
    before_yaml = yaml_path.read_text()
    lint(str(yaml_path), str(tmp_path / "ds_config.json"), "--fix")
    assert '"train_micro_batch_size_per_gpu": 8,' in (tmp_path / "ds_config.json").read_text()
    assert yaml_path.read_text() == before_yaml


def test_fix_writes_only_under_the_paths_named(tmp_path):
    """The JSON a named YAML pairs with is read and linted with it, but --fix writes only what the command line
    names: it says so, and the JSON is left as it is."""
    json_path = write(tmp_path, "ds_config.json", '{\n  "train_micro_batch_size_per_gpu": 8.0,\n  "gradient_clipping": '
                                                  '1.0,\n  "zero_optimization": {"stage": 2}\n}\n')
    before = json_path.read_text()
    yaml_path = write(tmp_path, "accelerate_config.yaml",
                      "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
                      "  deepspeed_config_file: ds_config.json\nnum_processes: 2\n")
    result = lint(str(yaml_path), "--fix")
    assert json_path.read_text() == before
    assert f"not fixing {json_path}: its real path" in result.stderr and "name it to fix it" in result.stderr
    assert "DS201" in result.stdout  # still reported: nothing was fixed


def test_fix_never_writes_into_allow_read_folders(tmp_path):
    """--allow-read lets a config name files under a folder; it never makes them writable."""
    shared = tmp_path / "shared"
    shared.mkdir()
    json_path = write(shared, "zero2.json", '{\n  "train_micro_batch_size_per_gpu": 8.0,\n  "gradient_clipping": 1.0'
                                            ',\n  "zero_optimization": {"stage": 2}\n}\n')
    before = json_path.read_text()
    (tmp_path / "repo").mkdir()
    write(tmp_path / "repo", "accelerate_config.yaml",
          "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
          "  deepspeed_config_file: ../shared/zero2.json\nnum_processes: 2\n")
    result = lint(str(tmp_path / "repo"), "--allow-read", str(shared), "--fix", "--unsafe-fixes")
    assert "DS201" in result.stdout and "DS009" not in result.stdout  # read, checked, reported
    assert json_path.read_text() == before


def test_file_mode_is_kept_and_no_temporary_file_is_left(tmp_path):
    path = write(tmp_path, "ds_config.json", '{"train_batch_size": 8.0, "gradient_clipping": 1.0}')
    os.chmod(path, 0o640)
    inode = path.stat().st_ino
    lint(str(path), "--fix")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.read_text() == '{"train_batch_size": 8, "gradient_clipping": 1.0}'
    assert path.stat().st_ino != inode  # replaced, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds_config.json"]


def test_write_is_atomic(tmp_path, monkeypatch):
    """The new text goes to a temporary file in the same folder, then os.replace swaps it in; if that
    fails, the original is intact and the temporary file is gone."""
    path = write(tmp_path, "ds_config.json", '{"a": 1}')
    calls = []

    def failing_replace(src, dst):
        calls.append((os.path.dirname(src), dst))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        fix.write_atomic(str(path), '{"a": 2}')
    assert calls == [(str(tmp_path), str(path))]
    assert path.read_text() == '{"a": 1}' and sorted(p.name for p in tmp_path.iterdir()) == ["ds_config.json"]


def test_symlinks_are_never_followed(tmp_path):
    target = write(tmp_path, "real_ds_config.json", '{"train_batch_size": 8.0, "gradient_clipping": 1.0}')
    link = tmp_path / "ds_config.json"
    link.symlink_to(target.name)
    result = lint(str(link), "--fix")
    assert "not fixing" in result.stderr and "symbolic link" in result.stderr
    assert link.is_symlink() and target.read_text() == '{"train_batch_size": 8.0, "gradient_clipping": 1.0}'
    with pytest.raises(OSError):
        fix.write_atomic(str(link), "{}")
    assert result.exit_code == 1


def test_crlf_and_bom_survive(tmp_path):
    text = '{\r\n  "train_batch_size": 8.0,\r\n  "gradient_clipping": 1.0\r\n}\r\n'
    path = tmp_path / "ds_config.json"
    path.write_bytes(text.encode("utf-8"))
    lint(str(path), "--fix")
    assert path.read_bytes() == text.replace("8.0", "8").encode("utf-8")
    text = '\ufeff{\r\n  "bfloat16": {"enabled": true},\r\n  "gradient_clipping": 1.0\r\n}\r\n'
    path.write_bytes(text.encode("utf-8"))
    lint(str(path), "--fix")
    assert path.read_bytes() == text.replace("bfloat16", "bf16").encode("utf-8")


# -- round trip: generated configs ----------------------------------------------------------------------


def _typed(value):
    """Values with their JSON types, so 8 and 8.0 (and True and 1) compare different."""
    if isinstance(value, dict):
        return {key: _typed(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def _read(text: str, path: str):
    """(loader, value): json.load's reading when it reads the file, else the hjson or YAML reading."""
    doc = engine.open_document(engine.decode(text.encode("utf-8")), path, engine.Options())
    if hasattr(doc, "scan"):
        if doc.json_error is None:
            return "json", doc.json_value
        return ("hjson", doc.hjson_value) if doc.scan is not None else (None, None)
    return ("yaml", doc.value) if doc.loaded else (None, None)


def _expected(value, applied):
    """The original data with each applied fix made to it, in the order applied."""
    value = copy.deepcopy(value)
    for finding, info in applied:
        tokens = pointer_tokens(finding.pointer)
        parent = value
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        new = json.loads(finding.fix)
        if info.kind == "rename":
            parent[new] = parent.pop(tokens[-1])
        elif not tokens:
            value = new
        else:
            parent[int(tokens[-1]) if isinstance(parent, list) else tokens[-1]] = new
    return value


def check_round_trip(path: str, options=None):
    """Fix `path` (safe fixes) in memory and check the round-trip properties; returns the applied fixes."""
    options = options or engine.Options()
    original = Path(path).read_bytes().decode("utf-8")
    run = fix.run([path], options, keep=lambda f: True)
    applied = []
    for result in run.files.values():
        if not result.changed:
            continue
        applied.extend(result.applied)
        before_loader, before = _read(result.original, result.path)
        after_loader, after = _read(result.text, result.path)
        # it still loads, with the same loader, as the same data but for the fixed values
        assert after_loader == before_loader, (result.path, before_loader, after_loader)
        if before_loader == "json" or before_loader == "yaml" or before_loader == "hjson":
            assert _typed(after) == _typed(_expected(before, result.applied)), result.path
        # only the edited lines change; line endings stay as they were
        old_lines, new_lines = result.original.splitlines(keepends=True), result.text.splitlines(keepends=True)
        assert len(old_lines) == len(new_lines)
        changed = sum(1 for a, b in zip(old_lines, new_lines) if a != b)
        assert changed <= len(result.applied)
        assert all(a[len(a.rstrip("\r\n")):] == b[len(b.rstrip("\r\n")):] for a, b in zip(old_lines, new_lines))
    # a fixpoint: nothing safe is left to fix (but in a file --fix may not write: the JSON a named YAML pairs
    # with is not itself named), and the fixed findings are gone
    documents = run.documents
    unwritable = {skipped for skipped, _ in run.skipped}
    leftover = [f for f in run.findings if f.fix is not None and f.file not in unwritable
                and (info := fix.plan(f, documents[f.file])).edit is not None and info.safe]
    assert not leftover, leftover
    fixed = {(finding.code, finding.pointer) for finding, _ in applied}
    assert not [f for f in run.findings if (f.code, f.pointer) in fixed and f.code not in ("DS202", "DS203")]
    assert Path(path).read_bytes().decode("utf-8") == original  # fix.run never writes
    return applied


BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


@st.composite
def generated_configs(draw):
    """A DeepSpeed config with safe-fixable defects, written in varied styles."""
    members = []
    for key in BATCH_KEYS:
        if draw(st.booleans()):
            n = draw(st.integers(1, 64))
            members.append((key, draw(st.sampled_from([str(n), f"{n}.0", f'"{n}"']))))
    members.append(("gradient_clipping", draw(st.sampled_from(["1.0", "0.5"]))))
    if draw(st.booleans()):
        members.append(("bfloat16", '{"enabled": %s}' % draw(st.sampled_from(["true", "false"]))))
    if draw(st.booleans()):
        members.append(("zero_optimization", draw(st.sampled_from(["true", "false"]))))
    elif draw(st.booleans()):
        inner = [("stage", draw(st.sampled_from(["0", "1", "2", '"2"', "3"])))]
        if draw(st.booleans()):
            inner.append(("reduce_bucket_size", draw(st.sampled_from(["500000000", "500000000.0", '"5e8"']))))
        if draw(st.booleans()):
            inner.append(("offload_optimizer", '{"device": %s}' % draw(st.sampled_from(['"cpu"', '"CPU"', '"None"',
                                                                                         '"none"']))))
        if draw(st.booleans()):
            inner.append(("stage3_gather_fp16_weights_on_model_save", draw(st.sampled_from(["true", "false"]))))
        if draw(st.booleans()):
            inner.append(("overlap_comm", draw(st.sampled_from(["true", '"true"', '"false"', "1"]))))
        members.append(("zero_optimization", "{" + ", ".join(f'"{k}": {v}' for k, v in inner) + "}"))
    if draw(st.booleans()):
        members.append(("optimizer", '{"type": "AdamW", "params": {"lr": 0.0001}}'))
    members = draw(st.permutations(members))
    indent = draw(st.sampled_from(["", "  ", "    ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    comment = draw(st.booleans())
    if indent:
        lines = ["{"]
        if comment:
            lines.append(f"{indent}// written by hand")
        for i, (key, value) in enumerate(members):
            lines.append(f'{indent}"{key}": {value}' + ("," if i < len(members) - 1 else ""))
        lines.append("}")
        text = newline.join(lines) + newline
    else:
        text = "{" + ", ".join(f'"{k}": {v}' for k, v in members) + "}"
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=generated_configs(), world_size=st.sampled_from([None, (1,), (8,)]))
def test_round_trip_on_generated_configs(tmp_path_factory, text, world_size):
    folder = tmp_path_factory.mktemp("gen")
    path = folder / "ds_config.json"
    path.write_bytes(text.encode("utf-8"))
    check_round_trip(str(path), engine.Options(world_sizes=world_size))


# -- round trip: the corpus -------------------------------------------------------------------------------


def test_round_trip_on_the_corpus(corpus):
    applied, checked = 0, 0
    for path, kind in corpus:
        if kind not in ("deepspeed", "accelerate") or not path.exists():
            continue
        checked += 1
        applied += len(check_round_trip(str(path)))
    # Real configs carry safe fixes (DS106 above all): more than one per seven files (../shared/corpus
    # has about three per four; the project's fixtures about one per four).
    assert checked and applied * 7 > checked, (applied, checked)


# -- another writer at the same time ----------------------------------------------------------------------------


ONE_FIX = ('{\n  "train_micro_batch_size_per_gpu": 8.0,\n  "gradient_clipping": 1.0,\n'
           '  "zero_optimization": {"stage": 2}\n}\n')
SAVED_MEANWHILE = '{\n  "zero_optimization": {"stage": 3},\n  "train_micro_batch_size_per_gpu": 16.0\n}\n'


def test_a_file_saved_between_the_lint_and_the_fix_is_not_fixed(tmp_path, monkeypatch):
    """The edits are offsets into the text the lint read: applied to a file an editor saved meanwhile they would
    corrupt it. The file is left as the other writer left it, and the run says so and exits 1."""
    path = write(tmp_path, "ds_config.json", ONE_FIX)
    real_lint = engine.lint_files
    calls = []

    def lint_then_someone_saves(*args, **kwargs):
        result = real_lint(*args, **kwargs)
        if not calls:
            path.write_text(SAVED_MEANWHILE)  # after the first pass read it, before the fix reads it again
        calls.append(1)
        return result

    monkeypatch.setattr(engine, "lint_files", lint_then_someone_saves)
    result = lint(str(path), "--fix")
    assert path.read_text() == SAVED_MEANWHILE
    assert "changed on disk while dsconfig was reading it" in result.stderr
    assert result.exit_code == 1


def test_a_file_saved_just_before_the_write_is_not_replaced(tmp_path, monkeypatch):
    """The last check is made after the fixed text is on disk, just before the rename: a second --fix or an
    editor that wrote the file after dsconfig read it keeps its text."""
    path = write(tmp_path, "ds_config.json", ONE_FIX)
    real_write = fix.write_atomic

    def someone_saves_then_write(target, text, expected=None):
        Path(target).write_text(SAVED_MEANWHILE)
        return real_write(target, text, expected=expected)

    monkeypatch.setattr(fix, "write_atomic", someone_saves_then_write)
    result = lint(str(path), "--fix")
    assert path.read_text() == SAVED_MEANWHILE
    assert f"not fixing {path}: it changed on disk since dsconfig read it" in result.stderr
    assert result.exit_code == 1
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".dsconfig")]  # no temporary file left


def test_an_unchanged_file_is_still_fixed(tmp_path):
    path = write(tmp_path, "ds_config.json", ONE_FIX)
    result = lint(str(path), "--fix")
    assert '"train_micro_batch_size_per_gpu": 8,' in path.read_text(), result.output
