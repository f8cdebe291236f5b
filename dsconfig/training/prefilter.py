"""Which walked scripts are worth parsing: text tests that run on every Python file of a folder walk.

Parsing is most of what a lint of a big tree costs (a 2,000-line training script takes tens of
milliseconds, its AST megabytes), and most scripts give the DS8xx checks nothing to start from. A
script is parsed when its text has somewhere a check can start AND the value there could be what the
check looks for:

  DS800  a `Trainer(` call of Lightning that may keep use_distributed_sampler=True (no positional
         arguments, no **settings, the sampler keyword not given as anything but True);
  DS801  a batch-size sink (a loader or sampler argument, a config key assigned or written in a
         literal) whose value may be a float as pysource.value_of reads it: not an int literal, an
         attribute or a subscript (unknown to it), and holding a float literal, a true division or
         float(), a name imported from the run's own modules, a call of a function the file defines, or
         a name whose assignments in the file may give one;
  DS802  JAX sharding calls, or a literal batch size next to a loader such a file defines.

Each test errs towards parsing where the text is hard to read (a call whose parentheses do not close
within a few thousand characters counts as a sink): a skipped script must be one the checks would have
found nothing in. tests/training/test_prefilter.py holds the prefilter to that against the checks
themselves on composed scripts, and bench/prefilter_recall.py on real repositories.
"""

from __future__ import annotations

import heapq
import keyword
import re

from .names import is_batch_key
from .pysource import STRINGS_AND_COMMENTS

# DS802 starts from literal batch sizes, only worth reading in a project that shards batches over devices
SHARDING_WORDS = ("make_array_from_process_local_data", "device_put", "shard(", "pmap", "host_local_array_to_global")
_LITERAL_BATCH = re.compile(r"batch_?size\w*\s*=\s*\d")
# A function or class of a sharding file that takes a batch size (in its parameters, or its __init__'s): the
# loaders DS802 follows calls into
_LOADER_FUNCTION = re.compile(r"^def (\w+)\s*\(([^)]{0,4000})\)", re.MULTILINE)  # bounded: no quadratic scan
_LOADER_CLASS = re.compile(r"^class (\w+)\b[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", re.MULTILINE)
_INIT = re.compile(r"def __init__\s*\(([^)]{0,4000})\)")
_BATCH_PARAMETER = re.compile(r"batch_?size")  # local_batch_size too

_TRUE_DIVISION = re.compile(r"[\w)\]]\s*/(?![/=])|(?<!/)/=")
# 1.0, .5, 1e-3, 2.: a float literal (not an attribute such as x.y, nor the 1 of x1.5)
_FLOAT_LITERAL = re.compile(r"(?<![\w.])(?:\d[\d_]*\.(?!\w)|\d[\d_]*\.\d|\.\d|\d[\d_]*[eE][-+]?\d)|\bfloat\s*\(")
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]*(\([^)]{0,4000}\)|[^\n]{0,1000})", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n]{0,1000})", re.MULTILINE)

# Where a batch size goes: a loader or sampler call (DataLoader, BatchSampler, a project's MyLoader), a config
# key assigned (`cfg["batch_size"] = `, `hps.train.batch_size = `) or written in a dict literal
# The callee's name ends so (scripts._batch_sinks). One pattern per word: a pattern that starts with a literal is
# searched for that literal, several times faster than an alternation over 40 MB of a big tree's scripts.
_SINK_CALLS = (re.compile(r"Loader\s*\("), re.compile(r"Sampler\s*\("))
# A batch key's name ends so (names.is_batch_key decides on the whole name); what follows makes it a store
# (case-insensitive by character classes: a literal first class lets the scan skip ahead, twice as fast as (?i))
_BATCH_NAME_END = re.compile(r"[bB](?:[sS]|[aA][tT][cC][hH]_?[sS][iI][zZ][eE])(?:_[pP][eE][rR]_[a-zA-Z]+)?\b"
                             r"(?=\s*(?:['\"]\s*(?:\]\s*=(?!=)|:)|=(?!=)))")
_BATCH_NAME_LOWER = re.compile(r"b(?:s|atch_?size)(?:_per_[a-z]+)?\b(?=\s*(?:['\"]\s*(?:\]\s*=(?!=)|:)|=(?!=)))")
_STORE = re.compile(r"\s*=(?!=)")
_SUBSCRIPT_STORE = re.compile(r"\s*\]\s*=(?!=)")
_ENTRY = re.compile(r"\s*:")
_STORE_ROOT = re.compile(r"([A-Za-z_]\w*)\s*(?:\.\s*\w+\s*|\[[^\[\]\n]*\]\s*)*$")
_LIGHTNING_TRAINER = re.compile(r"(?<![\w])Trainer\s*\(")
_SAMPLER_KEEPERS = ("use_distributed_sampler", "replace_sampler_ddp")

# A value the inference can never call a float: an int literal, an attribute or subscript chain (read as
# unknown), a string or a keyword constant
_PLAIN_VALUE = re.compile(
    r"\d[\d_]*|[A-Za-z_]\w*(?:\s*(?:\.\s*[A-Za-z_]\w*|\[[^\[\]()]*\]))+|True|False|None|(['\"])[^'\"\\\n]*\1")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_SCAN_LIMIT = 4000  # characters of one call or value read before giving up (and counting it as a sink)
# Places of one kind read in a file before giving up and parsing it (a hostile file of 30,000 `Loader(` would
# otherwise cost a scan each), and names followed through assignments
_MAX_SITES = 1000
_MAX_NAMES = 64


ALL = frozenset({"DS800", "DS801", "DS802", "DS803"})


def starts(text: str, sharded_project: bool, loaders: frozenset = frozenset(), steps: bool = True,
           local: frozenset[str] | None = None) -> frozenset[str]:
    """The DS8xx checks that can start in this script (empty: not worth parsing). `steps`: a --dataset-size was
    given (every loader is read); `sharded_project`: DS802 may apply (a world size was given and some script
    shards); `loaders`: the loader names of the sharding files; `local`: the names of the run's modules and
    packages (file stems, folder names; None: any import may be one)."""
    found = set()
    if "Trainer" in text and "lightning" in text and _lightning_trainer(text):
        found.add("DS800")
        if "offload" in text:
            found.add("DS803")
    if ("Loader" in text or "Sampler" in text) and steps and any(call.search(text) for call in _SINK_CALLS):
        return ALL
    if ("Loader" in text or "Sampler" in text) and _float_sink_call(text, local):
        found.add("DS801")
    elif ("batch" in text or "bs" in text) and _float_store(text, local):
        found.add("DS801")
    if sharded_project and (shards(text) or (bool(_LITERAL_BATCH.search(text)) and any(name in text for name in loaders))):
        found.add("DS802")
    return frozenset(found)


def shards(text: str) -> bool:
    """The text mentions JAX and a call that splits a batch over devices (a substring test: it runs on every
    script; DS802 is about JAX loaders, and PyTorch's FSDP also says `shard(`)."""
    return "jax" in text and any(word in text for word in SHARDING_WORDS)


def loader_names(texts) -> frozenset[str]:
    """Names of the top-level functions and classes that take a batch size in the files that shard batches: a
    script with a literal batch size is worth parsing for DS802 only when it names one of them."""
    names = set()
    for text in texts:
        for match in _LOADER_FUNCTION.finditer(text):
            if _BATCH_PARAMETER.search(match.group(2)):
                names.add(match.group(1))
        for match in _LOADER_CLASS.finditer(text):
            init = _INIT.search(match.group(2))
            if init is not None and _BATCH_PARAMETER.search(init.group(1)):
                names.add(match.group(1))
    return frozenset(names)


# -- DS800 -----------------------------------------------------------------------------------------

def _calls(patterns: tuple[re.Pattern, ...], text: str):
    """The arguments of each call the `patterns` find (each ends at the opening parenthesis), in the text's order;
    None once a call cannot be read or past _MAX_SITES calls: the caller then leaves the file to the parser."""
    matches = heapq.merge(*(pattern.finditer(text) for pattern in patterns), key=lambda match: match.start())
    for count, match in enumerate(matches):
        arguments = call_arguments(text, match.end() - 1) if count < _MAX_SITES else None
        yield arguments
        if arguments is None:
            return


def _lightning_trainer(text: str) -> bool:
    """A `Trainer(` call that may leave use_distributed_sampler at True (scripts._shards_its_loaders reads the
    parsed call the same way, and more: devices=1)."""
    for arguments in _calls((_LIGHTNING_TRAINER,), text):
        if arguments is None:
            return True
        if any(name is None or name == "**" for name, _ in arguments):
            continue  # positional arguments or **settings may hold it: the check leaves the call alone
        keepers = [value for name, value in arguments if name in _SAMPLER_KEEPERS]
        if not keepers or keepers[0] == "True":
            return True
    return False


# -- DS801 -----------------------------------------------------------------------------------------

def _float_sink_call(text: str, local: frozenset[str] | None) -> bool:
    """A loader or sampler call gets a batch size that may be a float: a batch-named keyword, or the second
    positional argument (DataLoader's and BatchSampler's batch_size)."""
    imports, seen = None, set()  # names found not to carry a float, for every call of the file
    for arguments in _calls(_SINK_CALLS, text):
        if arguments is None:
            return True
        values = [value for name, value in arguments if name not in (None, "**", "*") and is_batch_key(name)]
        positional = [value for name, value in arguments[:2] if name in (None, "*")]
        if len(positional) == 2 and not positional[0].startswith("*") and not positional[1].startswith("*"):
            values.append(positional[1])
        for value in values:
            if not _PLAIN_VALUE.fullmatch(value):
                imports = _imports(text, local) if imports is None else imports
                if _may_be_float(value, text, imports, seen):
                    return True
    return False


def _float_store(text: str, local: frozenset[str] | None) -> bool:
    """A config batch key assigned (`cfg["batch_size"] = `, `hps.train.batch_size = `, not `self.batch_size = `)
    or written in a dict literal (`"batch_size": `) with a value that may be a float."""
    imports, seen = None, set()  # names found not to carry a float, for every store of the file
    # searched in the lower-cased text where that keeps every offset (ASCII), twice as fast as a case class
    matches = _BATCH_NAME_LOWER.finditer(text.lower()) if text.isascii() else _BATCH_NAME_END.finditer(text)
    for count, match in enumerate(matches):
        if count == _MAX_SITES:
            return True
        start = match.start()
        while start > match.start() - 200 and start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        if not is_batch_key(text[start:match.end()]):
            continue
        before = text[start - 1] if start else ""
        if before == ".":
            store = _STORE.match(text, match.end())
            if store is None:
                continue
            line_start = max(text.rfind("\n", 0, start) + 1, start - 300)  # a bounded look back
            root = _STORE_ROOT.search(text, line_start, start - 1)
            if root is None or root.group(1) in ("self", "cls"):
                continue  # `self.batch_size = ...` is the object's own field, not a config's key
            value = _value_after(text, store.end(), "")
        elif before in ("'", '"') and text.startswith(before, match.end()):
            after = match.end() + 1
            if (found := _SUBSCRIPT_STORE.match(text, after)) is not None:
                value = _value_after(text, found.end(), "")
            elif (found := _ENTRY.match(text, after)) is not None:
                value = _value_after(text, found.end(), "}")
            else:
                continue
        else:
            continue
        if value is None:
            return True
        if _PLAIN_VALUE.fullmatch(value):
            continue
        imports = _imports(text, local) if imports is None else imports
        if _may_be_float(value, text, imports, seen):
            return True
    return False


def _may_be_float(value: str, text: str, imports: frozenset[str], seen: set[str]) -> bool:
    """Whether pysource.value_of may call `value` a float, read from the text as it reads the tree, erring
    towards yes: a float literal, true division or float() in it; a name imported from elsewhere, or a call
    of a function this file defines; a bare name whose assignments in this file (any scope) may give one.
    `seen`: the names already followed in this file (each is followed once: its verdict does not change)."""
    code = STRINGS_AND_COMMENTS.sub('""', value)
    if _FLOAT_LITERAL.search(code) or ("/" in code and _TRUE_DIVISION.search(code)):
        return True
    for match in _IDENTIFIER.finditer(code):
        name = match.group(0)
        if keyword.iskeyword(name) or code[:match.start()].rstrip().endswith("."):
            continue  # `and`, `if`; an attribute (never a float to the inference)
        after = code[match.end():].lstrip()[:1]
        if name in imports:
            return True  # a module's value or function, or a function the inference follows into
        if after == "(":
            if re.search(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{name}\b", text, re.MULTILINE):
                return True  # a function of this file: what it returns
            continue  # a builtin: int, len, sum (int or unknown to the inference)
        if after in (".", "[") or name in seen:
            continue  # an attribute or subscript of a local object: unknown
        seen.add(name)
        if len(seen) > _MAX_NAMES:
            return True
        for assigned in _assignments(text, name):
            if assigned is None or _may_be_float(assigned, text, imports, seen):
                return True
    return False


# `name = `, `a = name = `, `a, name = `, `name: int = `, `name //= `: a statement that binds `name`
_TARGETS_BEFORE = re.compile(r"[ \t]*(?:[\w.\[\]'\"]+[ \t]*=[ \t]*)*(?:\(?[ \t]*[\w.\[\] \t]*,[ \t]*)*")


def _assignments(text: str, name: str):
    """The value texts assigned to `name` by statements of the file (None: one that cannot be read, or `/=`)."""
    pattern = rf"(?<![\w.]){name}[ \t]*(?::[^=\n]{{0,200}})?(//|\*\*|>>|<<|[-+*/%@&|^])?=(?!=)"
    for match in re.finditer(pattern, text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if match.start() - line_start > 300 or not _TARGETS_BEFORE.fullmatch(text, line_start, match.start()):
            continue  # a keyword argument `f(name=...)`, a comparison: no binding of the name
        if match.group(1) == "/":
            yield None
            continue
        yield _value_after(text, match.end(), "")


def _imports(text: str, local: frozenset[str] | None) -> frozenset[str]:
    """The names the file's imports of the run's own modules bind (`from m import a, b as c`: a and c; `import
    x.y`: x; `import x as z`: z; relative imports always). An outside package's value is unknown to the
    inference (and its functions are not followed), so `import torch` binds nothing that matters here."""
    def own(module: str) -> bool:
        return local is None or module.startswith(".") or module.split(".")[0] in local

    names = set()
    for match in _FROM_IMPORT.finditer(text):
        if not own(match.group(1)):
            continue
        for part in match.group(2).strip("()").split(","):
            words = part.split("#")[0].split()
            if words:
                names.add(words[-1])
    for match in _IMPORT.finditer(text):
        for part in match.group(1).split("#")[0].split(","):
            words = part.split()
            if words and own(words[0]):
                names.add(words[-1] if len(words) == 3 else words[0].split(".")[0])
    return frozenset(names)


# -- reading a call's arguments and a value's text, without parsing --------------------------------

_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def call_arguments(text: str, opening: int) -> list[tuple[str | None, str]] | None:
    """The arguments of the call whose `(` is at `opening`: (keyword, value text) with None for a positional
    argument, "*" or "**" for unpacking. None when the call does not close within _SCAN_LIMIT characters."""
    parts = _split(text, opening + 1, ")")
    if parts is None:
        return None
    arguments = []
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if part.startswith("**"):
            arguments.append(("**", part[2:].strip()))
            continue
        if part.startswith("*"):
            arguments.append(("*", part))
            continue
        keyword = re.match(r"([A-Za-z_]\w*)\s*=(?!=)", part)
        arguments.append((keyword.group(1), part[keyword.end():].strip()) if keyword else (None, part))
    return arguments


def _value_after(text: str, start: int, closer: str) -> str | None:
    """The text of the value that starts at `start`: up to the end of the statement (`closer` empty) or the next
    `,` or `closer` at its own nesting level."""
    parts = _split(text, start, closer or "\n", first_only=True)
    return parts[0].strip() if parts is not None else None


def _split(text: str, start: int, closer: str, first_only: bool = False) -> list[str] | None:
    """Text from `start` split at top-level commas up to the unmatched `closer` (a newline: the end of a
    statement, or `;`), strings kept, comments and line continuations left out. None when the text is cut by
    _SCAN_LIMIT, ends unbalanced, or the value runs past its call's parenthesis in a way no code does."""
    parts: list[str] = []
    piece: list[str] = []
    depth: list[str] = []
    kept = position = start  # text[kept:position] belongs to the current piece
    end = min(len(text), start + _SCAN_LIMIT)

    def cut() -> str:
        piece.append(text[kept:position])
        joined = "".join(piece)
        piece.clear()
        return joined

    while position < end:
        char = text[position]
        if char in "\"'":
            position = _string_end(text, position, end)
            if position is None:
                return None
            continue
        if char == "#" or (char == "\\" and text.startswith("\n", position + 1)):
            piece.append(text[kept:position])
            newline = text.find("\n", position + 1, end)
            if char == "#":
                position = newline if newline >= 0 else end
            else:
                position += 2
            kept = position
            continue
        if depth:
            if char in _CLOSERS:
                depth.append(_CLOSERS[char])
            elif char == depth[-1]:
                depth.pop()
            elif char in ")]}":
                return None  # unbalanced: not code this reader understands
        elif char == closer or (closer == "\n" and char == ";"):
            parts.append(cut())
            return parts
        elif char in _CLOSERS:
            depth.append(_CLOSERS[char])
        elif char in ")]}":
            return None
        elif char == ",":
            parts.append(cut())
            if first_only:
                return parts
            kept = position + 1
        position += 1
    if closer == "\n" and position == len(text) and not depth:
        parts.append(cut())
        return parts
    return None


def _string_end(text: str, position: int, end: int) -> int | None:
    """The index after the string literal that starts at `position`, None when it does not end before `end`."""
    quote = text[position]
    triple = text.startswith(quote * 3, position)
    delimiter = quote * 3 if triple else quote
    position += len(delimiter)
    while position < end:
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if text.startswith(delimiter, position):
            return position + len(delimiter)
        if char == "\n" and not triple:
            return None
        position += 1
    return None
