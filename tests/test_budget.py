"""Per-file budgets (dsconfig.budget): a file's checks are bounded whatever it holds, and a file that runs past
its time is reported for itself while the run goes on."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

from dsconfig import budget, engine
from dsconfig.cli import cli


def test_did_you_mean_is_bounded_per_file(tmp_path):
    """Ten thousand unknown keys are each reported, but only the first CLOSEST_PER_FILE get a suggestion: the
    suggestions, not the findings, are what would cost seconds."""
    count = budget.CLOSEST_PER_FILE + 50
    config = {"train_batch_size": 8, **{f"gradient_clippin{i}": 1 for i in range(count)}}
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(config))
    findings = [f for f in engine.lint_files([str(path)], engine.Options()).findings if f.code == "DS102"]
    assert len(findings) == count
    suggested = [f for f in findings if "did you mean" in f.message]
    assert len(suggested) == budget.CLOSEST_PER_FILE
    # each file has its own budget: a second file still gets suggestions
    other = tmp_path / "ds_config_2.json"
    other.write_text(json.dumps({"train_batch_size": 8, "gradient_clippin": 1}))
    both = engine.lint_files([str(path), str(other)], engine.Options()).findings
    assert any("did you mean" in f.message for f in both if f.file == str(other))


def test_a_file_past_its_time_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    from dsconfig.deepspeed import models
    real = models._check_pydantic_sections

    def slow_on_one(*args, **kwargs):
        if any("slow" in str(arg) for arg in args):
            time.sleep(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(models, "_check_pydantic_sections", slow_on_one)
    monkeypatch.setattr(budget, "FILE_SECONDS", 0.5)
    (tmp_path / "a_ds_config.json").write_text(json.dumps({"train_batch_size": 8.0}))
    (tmp_path / "b_ds_config.json").write_text(json.dumps({"train_batch_size": 8, "zero_optimization": {"slow": 1}}))
    start = time.perf_counter()
    result = CliRunner().invoke(cli, ["lint", "--no-config", str(tmp_path)])
    assert time.perf_counter() - start < 15  # stopped at its budget, not after the 30 s sleep
    assert result.exit_code == 2, result.output
    assert "a_ds_config.json:1:" in result.stdout and "DS201" in result.stdout
    assert "b_ds_config.json: Overrun: checking it took more than" in result.stderr
    assert "1 file not checked" in result.stderr


def test_a_timer_of_the_caller_keeps_the_say():
    """Under the fuzz harness's own alarm, the budget sets no timer of its own (it would replace the caller's)."""
    import signal
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        with budget.per_file(0.01):
            time.sleep(0.05)  # no Overrun: the caller's timer is the one that runs
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 90
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_a_run_puts_the_callers_alarm_handler_back(tmp_path):
    """The run installs its SIGALRM handler once for all its files (budget.alarm_ready) and restores the caller's."""
    import signal

    def callers(signum, frame):
        pass

    previous = signal.signal(signal.SIGALRM, callers)
    try:
        for index in range(3):
            (tmp_path / f"ds_config_{index}.json").write_text(json.dumps({"train_batch_size": 8.0}))
        findings = engine.lint_files([str(p) for p in sorted(tmp_path.iterdir())], engine.Options()).findings
        assert [f.code for f in findings].count("DS201") == 3
        assert signal.getsignal(signal.SIGALRM) is callers
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    finally:
        signal.signal(signal.SIGALRM, previous)
