"""Launch scripts built to break a reader: never an exception, never a long stall, whatever the text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.launch import makefile, project

CASES = {
    "nested arithmetic": "X=$((" + "(" * 5000 + "1" + ")" * 5000 + "))\ndeepspeed --num_gpus $X t.py\n",
    "a long chain of signs": "X=$((" + "-" * 20000 + "1))\ndeepspeed --num_gpus $X t.py\n",
    "nested defaults": "deepspeed --num_gpus " + "${A:-" * 3000 + "1" + "}" * 3000 + " t.py\n",
    "nested substitutions": "deepspeed $(" * 3000 + ")" * 3000 + "\n",
    "unterminated quotes": "deepspeed \"--num_gpus 2 t.py\n'abc\n",
    "a NUL byte": "deepspeed\x00 --num_gpus 2 t.py\n",
    "an unterminated heredoc": "cat <<EOF\ndeepspeed --num_gpus 2 t.py\n",
    "a 2 MB word": "deepspeed " + "a" * 2_000_000 + " t.py\n",
    "submitters all the way down": "python s.py -- " * 5000 + "deepspeed --num_gpus 2 t.py\n",
}


def test_hostile_scripts_are_read_without_an_exception():
    for name, text in CASES.items():
        launches = project.launches("run.sh", text)
        assert all(launch.world_size in (None, 1, 2) for launch in launches), name


def test_a_makefile_whose_variables_double_at_each_level():
    levels = "".join(f"V{n} = $(V{n + 1})$(V{n + 1})\n" for n in range(40)) + "V40 = x\n"
    (launch,) = project.launches("Makefile", levels + "train:\n\tdeepspeed --num_gpus 2 t.py $(V0)\n")
    assert launch.world_size == 2


def test_a_makefile_whose_variables_refer_to_each_other():
    text = makefile.as_shell("A = $(B)\nB = $(A)\ntrain:\n\tdeepspeed --num_gpus $(A) t.py\n")
    (launch,) = project.launches("Makefile", "A = $(B)\nB = $(A)\ntrain:\n\tdeepspeed --num_gpus $(A) t.py\n")
    assert launch.world_size is None and "deepspeed" in text


SHELLISH = st.text(alphabet=st.sampled_from(list("deepspd torchun-=$(){}[]\"'\\`\n\t;&|<>#*@0123456789AB:+?")),
                   max_size=300)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHELLISH)
def test_any_text_is_read_without_an_exception(text):
    project.launches("run.sh", "deepspeed " + text)
    project.launches("Makefile", "t:\n\tdeepspeed " + text)
