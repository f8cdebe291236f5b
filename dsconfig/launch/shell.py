"""A shell script read as the commands it runs, statically: words after the script's own variables.

Enough of POSIX sh and bash for the scripts that start training: quotes and escapes, line continuations,
comments, `;` `&&` `||` `|` `&`, redirections, heredocs (skipped), assignments (`NAME=value`, `export`,
prefixes such as `CUDA_VISIBLE_DEVICES=0,1 deepspeed ...`), `$NAME`, `${NAME}`, `${NAME:-default}` and its
kin, `$((arithmetic))` and word splitting of unquoted expansions. What the script leaves to its caller or
the machine (`$1`, an environment variable it never sets, `$(nvidia-smi ...)`, a value set only inside an
`if` or a loop) stays UNKNOWN, never guessed. Nothing is executed.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class _Unknown:
    """A word (or value) the script does not determine."""

    def __repr__(self) -> str:
        return "UNKNOWN"


class _Splat:
    """An unquoted expansion of an unknown value: any number of unknown words."""

    def __repr__(self) -> str:
        return "SPLAT"


UNKNOWN = _Unknown()
SPLAT = _Splat()


class Partial(NamedTuple):
    """A word with an unknown part: `--nproc_per_node=$GPUS` is Partial("--nproc_per_node=")."""
    prefix: str  # the text before the first unknown part


def known(word) -> bool:
    return isinstance(word, str)


class Command(NamedTuple):
    line: int  # 1-based, of the command's first word
    column: int
    words: tuple  # str, UNKNOWN or SPLAT, after expansion; assignments prefixing the command removed
    env: dict  # what the command's process sees that the script set: exported names and its own prefixes
    text: str  # the command as written (continuations joined), for messages


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_OPENERS = {"if", "while", "until", "case", "for", "select"}
_CLOSERS = {"fi", "done", "esac"}
_PREFIX_WORDS = {"then", "else", "elif", "do", "{", "}", "!", "time", "(", ")"}
_DECLARE = {"export", "declare", "typeset", "local", "readonly"}
_MAX_PIECES = 20_000  # a script larger than this is read no further (a generated file, not a launch)


# -- lexing: the text into words (pieces still unexpanded) and operators ------------------------------

class _Word(NamedTuple):
    pieces: tuple  # ("lit", text) | ("q", text) | ("var", name, op, arg, quoted) | ("cmd", quoted)
    line: int      # | ("arith", expr, quoted)
    column: int
    start: int  # offset in the text
    end: int


class _Op(NamedTuple):
    op: str
    line: int
    start: int


_BLANK_RUN = re.compile(r"[ \t\r]+")
_PLAIN_RUN = re.compile(r"[^ \t\r\n;&|()<>\\'\"$`]+")


def _lex(text: str) -> list:
    tokens: list = []
    i, n = 0, len(text)
    line, line_start = 1, 0
    pending_heredocs: list[tuple[str, bool]] = []
    while i < n and len(tokens) < _MAX_PIECES:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line, line_start = line + 1, i
            continue
        if c in " \t\r":
            i = _BLANK_RUN.match(text, i).end()
            continue
        if c == "\n":
            tokens.append(_Op("\n", line, i))
            i += 1
            line, line_start = line + 1, i
            if pending_heredocs:
                i, line = _skip_heredocs(text, i, line, pending_heredocs)
                line_start = i
                pending_heredocs = []
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in ";&|()<>":
            op, i, heredoc = _operator(text, i)
            if heredoc is not None:
                pending_heredocs.append(heredoc)
            tokens.append(_Op(op, line, i))
            continue
        word, i, lines = _read_word(text, i, line, i - line_start + 1)
        if word.pieces:
            tokens.append(word)
        if lines:
            line += lines
            line_start = text.rfind("\n", 0, i) + 1
    return tokens


def _operator(text: str, i: int) -> tuple[str, int, tuple | None]:
    """(operator, next offset, heredoc (delimiter, strip tabs) or None)."""
    for op in (";;", "&&", "||", "|&", "&>>", "&>", ">>", ">&", "<&", ">|", "<<<", "<<-", "<<", "<>"):
        if text.startswith(op, i):
            i += len(op)
            if op in ("<<", "<<-"):
                j = i
                while j < len(text) and text[j] in " \t":
                    j += 1
                k = j
                while k < len(text) and text[k] not in " \t\n;&|<>()":
                    k += 1
                delimiter = text[j:k].replace('"', "").replace("'", "").replace("\\", "")
                return "<<", k, (delimiter, op == "<<-")
            return (op if op in (";;", "&&", "||", "|&") else "redirect"), i, None
    c = text[i]
    return ("redirect" if c in "<>" else c), i + 1, None


def _skip_heredocs(text: str, i: int, line: int, heredocs: list) -> tuple[int, int]:
    for delimiter, strip in heredocs:
        while i < len(text):
            end = text.find("\n", i)
            body_line = text[i:] if end < 0 else text[i:end]
            i = len(text) if end < 0 else end + 1
            line += 1
            if (body_line.lstrip("\t") if strip else body_line) == delimiter:
                break
    return i, line


def _read_word(text: str, i: int, line: int, column: int) -> tuple[_Word, int, int]:
    pieces: list = []
    start, n, lines = i, len(text), 0
    while i < n:
        c = text[i]
        if c == "(" and pieces and _ASSIGNMENT.fullmatch(text[start:i]):
            end = _matching(text, i + 1, "(", ")")  # NAME=(an array): its words are not followed
            lines += text.count("\n", i, end)
            pieces.append(("cmd", False))
            i = end
            continue
        if c in " \t\r\n;&|()<>":
            if c in "<>" and text[start:i].isdigit():
                pieces = []  # `2>` names a file descriptor, not a word
            break
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                lines += 1
                continue
            pieces.append(("q", text[i + 1:i + 2]))
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            pieces.append(("q", text[i + 1:end]))
            lines += text.count("\n", i, end)
            i = end + 1
        elif c == '"':
            i, inner, more = _double_quoted(text, i + 1)
            pieces.extend(inner)
            lines += more
        elif c == "$":
            piece, i = _dollar(text, i, quoted=False)
            pieces.append(piece)
        elif c == "`":
            i, more = _backquoted(text, i)
            lines += more
            pieces.append(("cmd", False))
        else:
            j = _PLAIN_RUN.match(text, i).end()
            pieces.append(("lit", text[i:j]))
            i = j
    return _Word(tuple(pieces), line, column, start, i), i, lines


def _backquoted(text: str, i: int) -> tuple[int, int]:
    """(offset past the `...` command substitution starting at i, newlines inside it)."""
    end = text.find("`", i + 1)
    end = len(text) if end < 0 else end
    return end + 1, text.count("\n", i, end)


def _double_quoted(text: str, i: int) -> tuple[int, list, int]:
    pieces, n, buffer, lines = [], len(text), [], 0
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            break
        if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                buffer.append(text[i + 1])
            else:
                lines += 1
            i += 2
        elif c == "$":
            if buffer:
                pieces.append(("q", "".join(buffer)))
                buffer = []
            piece, i = _dollar(text, i, quoted=True)
            pieces.append(piece)
        elif c == "`":
            if buffer:
                pieces.append(("q", "".join(buffer)))
                buffer = []
            i, more = _backquoted(text, i)
            lines += more
            pieces.append(("cmd", True))
        else:
            if c == "\n":
                lines += 1
            buffer.append(c)
            i += 1
    pieces.append(("q", "".join(buffer)))  # "" is a word of its own, though empty
    return i, pieces, lines


def _matching(text: str, i: int, opener: str, closer: str) -> int:
    """The offset just past the closer matching the opener before `i` (quotes respected)."""
    depth, n = 1, len(text)
    while i < n and depth:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and opener == "(":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
        i += 1
    return i


def _dollar(text: str, i: int, quoted: bool) -> tuple[tuple, int]:
    n = len(text)
    nxt = text[i + 1] if i + 1 < n else ""
    if text.startswith("$((", i):
        end = _matching(text, i + 3, "(", ")")
        expr = text[i + 3:end - 1]
        if end < n and text[end] == ")":
            end += 1
            return ("arith", expr, quoted), end
        return ("cmd", quoted), end
    if nxt == "(":
        return ("cmd", quoted), _matching(text, i + 2, "(", ")")
    if nxt == "{":
        end = _matching(text, i + 2, "{", "}")
        return _braced(text[i + 2:end - 1], quoted), end
    match = _NAME.match(text, i + 1)
    if match:
        return ("var", match.group(), "", "", quoted), match.end()
    if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
        return ("var", nxt, "", "", quoted and nxt not in "@*"), i + 2  # "$@": as many words as arguments
    return ("lit" if not quoted else "q", "$"), i + 1


_BRACED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!])(:?[-=+?])?(.*)", re.S)


def _braced(inner: str, quoted: bool) -> tuple:
    if inner.endswith(("[@]", "[*]")):
        return ("var", None, "", "", False)  # an array's elements: any number of words
    match = _BRACED.fullmatch(inner)
    if match is None or (match.group(3) and not match.group(2)):  # ${#A}, ${A%x}, ${A[@]}, ${A/x/y}: not followed
        return ("var", None, "", "", quoted)
    return ("var", match.group(1), match.group(2) or "", match.group(3), quoted)


# -- running: the commands in order, with the variables the script has set by then -----------------

class _State:
    def __init__(self):
        self.values: dict[str, object] = {}  # name -> str or UNKNOWN
        self.exported: set[str] = set()
        self.depth = 0  # inside an if, case or loop: what is assigned there may not happen
        self.sourced = False  # after `source`: any variable may have been set
        self.nesting = 0  # `${A:-${B:-...}}` being expanded: how deep


def commands(text: str, environment: dict[str, str] | None = None) -> list[Command]:
    """The simple commands of the script, in order, each with the words it runs. `environment`: variables
    the script's commands see that it does not set itself (a SLURM job's, from its #SBATCH lines)."""
    tokens = _lex(text)
    state = _State()
    for name, value in (environment or {}).items():
        state.values[name] = value
        state.exported.add(name)
    out: list[Command] = []
    group: list = []
    for token in tokens + [_Op("\n", 0, len(text))]:
        if isinstance(token, _Word):
            group.append(token)
            continue
        if token.op in ("redirect", "<<"):
            group.append(token)
            continue
        if group:
            command = _run(group, text, state)
            if command is not None:
                out.append(command)
            group = []
    return out


def _run(group: list, text: str, state: _State) -> Command | None:
    words: list[_Word] = []
    skip = False
    for token in group:  # drop each redirection and its target
        if isinstance(token, _Op):
            skip = True
        elif skip:
            skip = False
        else:
            words.append(token)
    while words and _plain(words[0]) in _PREFIX_WORDS | _CLOSERS | _OPENERS:
        word = _plain(words.pop(0))
        if word in _CLOSERS:
            state.depth = max(0, state.depth - 1)
        elif word in _OPENERS:
            state.depth += 1
            if word in ("for", "select"):
                if words:
                    state.values[_plain(words[0]) or ""] = UNKNOWN
                return None
            if word == "case":
                return None
    if not words:
        return None
    prefix: dict[str, object] = {}
    while words and _assignment(words[0]) is not None:
        name, value = _assignment_value(words[0], state)
        prefix[name] = value
        words.pop(0)
    if not words:
        for name, value in prefix.items():
            _assign(state, name, value)
        return None
    head = _plain(words[0])
    if head in _DECLARE:
        for word in words[1:]:
            if _assignment(word) is not None:
                name, value = _assignment_value(word, state)
                _assign(state, name, value)
                if head in ("export", "declare", "typeset"):
                    state.exported.add(name)
            elif head == "export" and (name := _plain(word)):
                state.exported.add(name)
        return None
    if head == "unset":
        for word in words[1:]:
            state.values.pop(_plain(word) or "", None)
        return None
    if head in ("source", "."):
        state.sourced = True
        return None
    if head == "function":
        return None
    expanded: list = []
    for word in words:
        expanded.extend(_expand(word, state))
    env = {name: state.values.get(name, UNKNOWN) for name in state.exported}
    env.update(prefix)
    first, last = words[0], words[-1]
    return Command(first.line, first.column, tuple(expanded), env, text[first.start:last.end])


def _plain(word: _Word) -> str | None:
    """The word's text when it is one literal piece (a keyword or a name), else None."""
    if len(word.pieces) == 1 and word.pieces[0][0] == "lit":
        return word.pieces[0][1]
    return None


def _assignment(word: _Word):
    if not word.pieces or word.pieces[0][0] != "lit":
        return None
    return _ASSIGNMENT.match(word.pieces[0][1])


def _assignment_value(word: _Word, state: _State) -> tuple[str, object]:
    match = _assignment(word)
    rest = ((("lit", word.pieces[0][1][match.end():]),) if match.end() < len(word.pieces[0][1]) else ()) \
        + word.pieces[1:]
    value = _join(rest, state)
    if match.group(2):  # NAME+=value
        before = state.values.get(match.group(1), "")
        value = UNKNOWN if UNKNOWN in (before, value) else _join((("q", before) if isinstance(before, str) else
                                                                  ("held", before), ("held", value)), state)
    return match.group(1), value


def _assign(state: _State, name: str, value) -> None:
    if state.depth and state.values.get(name) != value:
        value = UNKNOWN  # set in a branch or a loop: whether it happens is up to the run
    state.values[name] = value


def _lookup(state: _State, name: str | None, op: str, arg: str):
    """A parameter's value, or UNKNOWN."""
    if name is None:
        return UNKNOWN
    value = state.values.get(name)
    unset = value is None
    if name.isdigit() or name in "@*#?$!-":
        value, unset = UNKNOWN, False  # the caller's arguments, or the shell's own state
        if name.isdigit() and name != "0" and op in (":-", "-", ":=", "="):
            value, unset = None, True  # `${1:-8}`: what it is when the script is run as written, without arguments
    if unset and not op:
        return UNKNOWN  # from the environment, which the script does not say
    if op in (":-", "-", ":=", "="):
        if value is UNKNOWN or (unset and state.sourced):
            return UNKNOWN
        if unset or (op[0] == ":" and value == ""):
            default = _nested(arg, state)
            if op.endswith("=") and name.isidentifier():
                state.values[name] = default
            return default
        return value
    if op in (":+", "+"):
        if value is UNKNOWN:
            return UNKNOWN
        return "" if unset or (op == ":+" and value == "") else _nested(arg, state)
    if op:
        return UNKNOWN  # ${A?message}
    return value


_MAX_NESTING = 32


def _nested(arg: str, state: _State):
    """The value of the word inside `${NAME:-word}`, or UNKNOWN past a sane depth of such words."""
    if not arg:
        return ""
    if state.nesting >= _MAX_NESTING:
        return UNKNOWN
    state.nesting += 1
    try:
        return _join(_inner_pieces(arg), state)
    finally:
        state.nesting -= 1


def _inner_pieces(text: str) -> list:
    """The pieces of the word inside `${NAME:-word}`: blanks there are part of the word."""
    pieces, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "'":
            end = text.find("'", i + 1)
            end = len(text) if end < 0 else end
            pieces.append(("q", text[i + 1:end]))
            i = end + 1
        elif c == '"':
            i, inner, _ = _double_quoted(text, i + 1)
            pieces.extend(inner)
        elif c == "$":
            piece, i = _dollar(text, i, quoted=False)
            pieces.append(piece)
        elif c == "\\" and i + 1 < len(text):
            pieces.append(("q", text[i + 1]))
            i += 2
        else:
            j = i
            while j < len(text) and text[j] not in "'\"$\\":
                j += 1
            pieces.append(("lit", text[i:max(j, i + 1)]))
            i = max(j, i + 1)
    return pieces


def _piece_value(piece: tuple, state: _State):
    kind = piece[0]
    if kind in ("lit", "q", "held"):
        return piece[1]
    if kind == "var":
        return _lookup(state, piece[1], piece[2], piece[3])
    if kind == "arith":
        return _arith(piece[1], state)
    return UNKNOWN


def _join(pieces, state: _State):
    """The pieces as one value, not split (an assignment, a quoted word): a str, or a tuple of strs and
    UNKNOWN holes (`"--nproc_per_node $GPUS --nnodes 1"` with GPUS unknown), or UNKNOWN."""
    parts: list = []
    for piece in pieces:
        value = _piece_value(piece, state)
        parts.extend(value if isinstance(value, tuple) else (value,))
    if all(part is UNKNOWN for part in parts) and parts:
        return UNKNOWN
    merged: list = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    if not merged:
        return ""
    return merged[0] if len(merged) == 1 else tuple(merged)


_BLANKS = re.compile(r"(\s+)")


def _expand(word: _Word, state: _State) -> list:
    """The words one written word becomes: unquoted expansions split on whitespace; a word with an unknown
    part is Partial (its known start) or UNKNOWN; an unknown part standing alone where it would be split is
    SPLAT (any number of words: `$ARGS`, "$@", the `$GPUS` of an unquoted `"--nproc_per_node $GPUS"`)."""
    fields: list = []
    current: list | None = None  # the field being built; None until something (even "") starts it
    holed: str | None = None  # the field's text before its first unknown part
    alone = False  # the field so far is one unknown part of a split expansion, nothing else

    def close():
        if current is not None:
            fields.append(SPLAT if alone else _field(current, holed))

    for piece in word.pieces:
        value = _piece_value(piece, state)
        splits = piece[0] in ("var", "arith", "cmd") and not piece[-1]
        for part in value if isinstance(value, tuple) else (value,):
            if part is UNKNOWN:
                alone = splits and current is None
                current = current or []
                holed = "".join(current) if holed is None else holed
            elif not splits:
                current = (current or []) + [part]
                alone = alone and part == ""
            else:
                for chunk in _BLANKS.split(part):
                    if chunk and chunk.isspace():
                        close()
                        current, holed, alone = None, None, False
                    elif chunk:
                        current = (current or []) + [chunk]
                        alone = False
    close()
    return fields


def _field(parts: list, holed: str | None):
    if holed is None:
        return "".join(parts)
    return Partial(holed) if holed else UNKNOWN


_ARITH_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|(\*\*|[-+*/%()]))")


def _arith(expr: str, state: _State):
    """$(( )) over integers and the script's variables: + - * / % ** and parentheses, else UNKNOWN."""
    tokens, i = [], 0
    expr = expr.strip()
    if expr.count("(") > _MAX_NESTING or len(expr) > 256:
        return UNKNOWN  # the evaluator recurses per parenthesis and per sign
    while i < len(expr):
        match = _ARITH_TOKEN.match(expr, i)
        if match is None or match.end() == i:
            return UNKNOWN
        number, name, dollar, op = match.groups()
        i = match.end()
        if number is not None:
            tokens.append(int(number))
        elif op is not None:
            tokens.append(op)
        else:
            value = state.values.get(name or dollar)
            if not isinstance(value, str) or not value.strip().lstrip("-").isdigit():
                return UNKNOWN
            tokens.append(int(value))
    try:
        value, rest = _sum(tokens)
    except (ValueError, ZeroDivisionError, IndexError, OverflowError):
        return UNKNOWN
    return UNKNOWN if rest else str(value)


def _sum(tokens: list) -> tuple[int, list]:
    value, tokens = _product(tokens)
    while tokens and tokens[0] in ("+", "-"):
        op, (right, tokens) = tokens[0], _product(tokens[1:])
        value = value + right if op == "+" else value - right
    return value, tokens


def _product(tokens: list) -> tuple[int, list]:
    value, tokens = _power(tokens)
    while tokens and tokens[0] in ("*", "/", "%"):
        op, (right, tokens) = tokens[0], _power(tokens[1:])
        if op == "*":
            value *= right
        else:  # the shell truncates toward zero
            quotient = abs(value) // abs(right) * (1 if (value >= 0) == (right >= 0) else -1)
            value = quotient if op == "/" else value - quotient * right
    return value, tokens


def _power(tokens: list) -> tuple[int, list]:
    base, tokens = _unary(tokens)
    if tokens and tokens[0] == "**":
        exponent, tokens = _power(tokens[1:])
        if exponent < 0 or exponent > 64:
            raise ValueError("exponent")
        return base ** exponent, tokens
    return base, tokens


def _unary(tokens: list) -> tuple[int, list]:
    head = tokens[0]
    if head in ("-", "+"):
        value, rest = _unary(tokens[1:])
        return (-value if head == "-" else value), rest
    if head == "(":
        value, rest = _sum(tokens[1:])
        if not rest or rest[0] != ")":
            raise ValueError("parenthesis")
        return value, rest[1:]
    if isinstance(head, int):
        return head, tokens[1:]
    raise ValueError(head)
