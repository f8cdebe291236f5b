"""Files that are neither DeepSpeed nor Accelerate configs: skipped with a note.

One thing is still worth saying about them: a batch size that is not an integer. A training
script hands `{"train": {"batch_size": 7.0}}` to `torch.utils.data.DataLoader`, which raises
"batch_size should be a positive integer value".
"""

from __future__ import annotations

from .findings import Finding
from .pointers import dotted, pointer_join
from .rules.files import NON_INTEGER_BATCH_SIZE, NOT_A_CONFIG


def _is_batch_key(key: str) -> bool:
    key = key.lower()
    return key in ("batch_size", "batchsize") or key.endswith("_batch_size")


def _bad_batch_sizes(value, pointer: str = ""):
    stack = [(value, pointer)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                child_pointer = pointer_join(where, key)
                if isinstance(key, str) and _is_batch_key(key) and _not_a_batch_size(child):
                    yield child_pointer, child
                elif isinstance(child, (dict, list)):
                    stack.append((child, child_pointer))
        elif isinstance(node, list):
            stack.extend((child, pointer_join(where, i)) for i, child in enumerate(node)
                         if isinstance(child, (dict, list)))


def _not_a_batch_size(value) -> bool:
    if value is None or value == "auto" or isinstance(value, (dict, list)):
        return False
    return isinstance(value, bool) or not isinstance(value, int) or value <= 0


def lint_other(doc) -> list[Finding]:
    findings = []
    parsed = doc.scan is not None or doc.json_error is None
    if not parsed:
        why = "it is nested too deeply to read" if "nesting too deep" in str(doc.json_error) else "it is not valid JSON"
        findings.append(Finding(NOT_A_CONFIG, f"not recognised as a DeepSpeed or Accelerate config ({why}); skipped"))
        return findings
    value = doc.json_value if doc.json_error is None else doc.hjson_value
    findings.append(Finding(NOT_A_CONFIG, "not a DeepSpeed or Accelerate config; skipped"))
    found = sorted(_bad_batch_sizes(value), key=lambda item: item[0])
    for pointer, bad in found:
        fix = None
        if isinstance(bad, float) and bad.is_integer() and bad > 0:
            fix = str(int(bad))
        elif isinstance(bad, str) and bad.strip().isdigit() and int(bad) > 0:
            fix = str(int(bad))
        findings.append(Finding(NON_INTEGER_BATCH_SIZE, f"{dotted(pointer)} is {bad!r}: a PyTorch DataLoader needs a "
                                                        "positive integer batch_size", pointer, fix=fix))
    return findings
