"""JSON pointers (RFC 6901): how every finding says where it is, in JSON and YAML alike."""

from __future__ import annotations

from .values import key_token


def escape(token: str) -> str:
    """One reference token as it is written inside a pointer (`~` as `~0`, `/` as `~1`)."""
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def pointer_join(base: str, token) -> str:
    """Append one reference token to a JSON pointer."""
    return f"{base}/{escape(str(key_token(token)))}"


def pointer_from(tokens) -> str:
    """A JSON pointer from its reference tokens."""
    return "".join("/" + escape(str(key_token(token))) for token in tokens)


def pointer_tokens(pointer: str) -> list[str]:
    """The reference tokens of a pointer, unescaped."""
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def dotted(pointer: str) -> str:
    """`/zero_optimization/offload_param/device` -> `zero_optimization.offload_param.device`."""
    return ".".join(pointer_tokens(pointer)) or "(top level)"


MISSING = object()  # what value_at returns where nothing is


def value_at(root, tokens):
    """The value the reference tokens lead to in a loaded tree (list indexes as digits), else MISSING."""
    node = root
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and isinstance(token, str) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return MISSING
    return node
