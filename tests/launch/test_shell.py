"""dsconfig.launch.shell against bash: the words a command runs, after the script's assignments.

Generated scripts assign variables (quoted, unquoted, with spaces, defaults, arithmetic) and run one
command; bash prints that command's words. Every word dsconfig claims to know must be bash's word, in
bash's order; what it does not know it must say (UNKNOWN, SPLAT, Partial), never guess.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.launch.shell import SPLAT, UNKNOWN, Partial, commands

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

NAMES = ["A", "B", "GPUS"]
VALUES = ["4", "8", "two words", " lead", "trail ", "", "x*y", "a'b", 'q"q', "--nproc_per_node 4 --nnodes 2",
          "ds.json", "$A", "${B:-9}"]
REFERENCES = ["$A", '"$A"', "${B}", '"${B}x"', "${GPUS:-8}", '"${GPUS:-8}"', "${B:-z z}", "$((GPUS*2))",
              "pre$A", "'$A'", "\\$A", "--x=$B", "${A-}", "${Z:-1}", "${1:-7}", "lit", '"a b"']
# what the caller or the machine decides: drawn rarely, so that most scripts are compared word for word
UNDETERMINED = ["$Z", "$1", '"$@"', "$(date)", "`hostname`"]


def bash_words(script: str) -> list[str]:
    result = subprocess.run([BASH, "--noprofile", "--norc", "-c", script], capture_output=True, env={},
                            timeout=10)
    return result.stdout.decode().split("\0")[1:-1]


def quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


assignment = st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES),
                       st.sampled_from(["plain", "double", "single"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(assignment, max_size=4),
       st.lists(st.one_of(st.sampled_from(REFERENCES), st.sampled_from(REFERENCES),
                          st.sampled_from(REFERENCES), st.sampled_from(UNDETERMINED)), min_size=1, max_size=5))
def test_words_match_bash(assignments, references):
    lines = []
    for name, value, style in assignments:
        if style == "single" or ("'" not in value and style == "plain" and (" " in value or "*" in value)):
            written = quote(value)
        elif style == "double":
            written = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        else:
            written = value.replace("'", "\\'").replace('"', '\\"')
        lines.append(f"{name}={written}")
    command = "printf '%s\\0' START " + " ".join(references)  # START: printf prints once even with no words
    script = "set -f\n" + "\n".join(lines) + "\n" + command + "\n"
    expected = bash_words(script)
    found = [c for c in commands(script) if c.words and c.words[0] == "printf"]
    assert len(found) == 1
    ours = list(found[0].words[3:])
    if any(word is SPLAT for word in ours):
        return  # any number of words: nothing claimed
    assert len(ours) == len(expected), (script, ours, expected)
    for mine, real in zip(ours, expected):
        if isinstance(mine, Partial):
            assert real.startswith(mine.prefix), (script, ours, expected)
        elif mine is not UNKNOWN:
            assert mine == real, (script, ours, expected)


def words_of(script: str, head: str) -> tuple:
    return next(c.words for c in commands(script) if c.words and c.words[0] == head)


def test_continuations_comments_and_multiline_quotes():
    script = 'ARGS="\n  --nproc_per_node 4 \\\n  --nnodes 2\n"\n# a comment\ntorchrun $ARGS \\\n  train.py  # trailing\n'
    assert words_of(script, "torchrun") == ("torchrun", "--nproc_per_node", "4", "--nnodes", "2", "train.py")


def test_what_the_caller_or_machine_decides_stays_unknown():
    script = ("N=$(nvidia-smi -L | wc -l)\nif [ -n \"$X\" ]; then M=2; fi\nfor g in 1 2; do echo; done\n"
              "run $N $M $g $HOME ${1:-3} $1 --n=$N\n")
    assert words_of(script, "run") == ("run", SPLAT, SPLAT, SPLAT, SPLAT, "3", SPLAT, Partial("--n="))


def test_prefix_and_exported_environment():
    script = ("export CUDA_VISIBLE_DEVICES=0,1\nLOCAL=5\nNCCL_DEBUG=INFO deepspeed train.py\n"
              "CUDA_VISIBLE_DEVICES=3 torchrun train.py\n")
    first, second = [c for c in commands(script) if c.words]
    assert first.env == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO"}
    assert second.env == {"CUDA_VISIBLE_DEVICES": "3"}
    assert first.line == 3 and second.line == 4


def test_heredoc_bodies_and_redirections_are_not_commands():
    script = ("cat > ds.json <<EOF\n{\"train_batch_size\": 8}\ndeepspeed not-a-command\nEOF\n"
              "deepspeed --num_gpus 2 train.py > log.txt 2>&1 &\n")
    runs = [c.words for c in commands(script) if c.words and c.words[0] == "deepspeed"]
    assert runs == [("deepspeed", "--num_gpus", "2", "train.py")]


def test_arithmetic_and_defaults():
    script = "GPUS=${GPUS:-2}\nBATCH=16\nPER=4\nACC=$((BATCH / PER / GPUS))\nrun $ACC $((GPUS ** 2 + 1))\n"
    assert words_of(script, "run") == ("run", "2", "5")
