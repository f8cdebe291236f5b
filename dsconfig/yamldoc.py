"""A YAML file read once, exactly as `yaml.safe_load` reads it, with where every value sits.

Accelerate reads its config with `yaml.safe_load` (YAML 1.1: an unquoted `no` is False, the
last of two equal keys wins silently). One PyYAML pass composes the node tree and constructs
the value from it, so the value is safe_load's and the nodes give positions: a JSON-pointer
index of key and value offsets for `locate`, the duplicate keys, and the plain scalars that
YAML 1.1 turned into booleans. PyYAML is imported here only, so JSON-only runs never load it.

safe_load is PyYAML's pure-Python SafeLoader; libyaml's CSafeLoader is about ten times faster
but reads some texts differently (`0<TAB>` loads, `!` is '' instead of None, `{a?}` and `|#` load
where safe_load fails, any nesting depth composes where safe_load hits RecursionError). So libyaml
reads a text only when it stays inside a plain subset where the two agree (`_libyaml_agrees`: no
tabs or control characters, tags, block scalars or directives, backslashes only as escapes of a
double-quoted string, no flow collections but `[]`, `{}` and lists and mappings of plain words,
shallow nesting, short lines; tests/test_yamldoc_fast.py checks the agreement), and only when
libyaml loads it without error: every error message comes from the pure-Python loader.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .document import LoadedDocument, LoadError
from .pointers import pointer_join

_BOOL_TAG = "tag:yaml.org,2002:bool"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_YAML12_BOOLEANS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})


class Span(NamedTuple):
    key_start: int | None  # offset of the key (None for the root and list items)
    start: int  # offset of the value


class Duplicate(NamedTuple):
    pointer: str
    key_start: int
    first_key_start: int


class YamlDocument(LoadedDocument):
    """One YAML input. `loaded` and `value` are what `yaml.safe_load` returns (or that it raises)."""

    format = "yaml"

    def __init__(self, path: str, text: str, fast: bool = True):
        super().__init__(path, text)
        self._duplicates: list[Duplicate] = []
        self._booleans: dict[str, str] = {}  # pointer -> the word (`no`, `Off`, ...) safe_load made a bool
        self._spans: dict[str, Span] = {}
        self._scalars: dict[int, tuple[int, str | None]] | None = None
        self._read(fast)  # fast=False: never libyaml (the agreement tests compare the two)

    # -- the Document protocol -----------------------------------------------------------------

    @property
    def spans(self) -> dict:
        return self._spans

    @property
    def duplicates(self) -> list:
        return self._duplicates

    @property
    def yaml11_booleans(self) -> dict[str, str]:
        return self._booleans

    def extent(self, pointer: str, on_key: bool = False) -> tuple[int, int] | None:
        """A scalar value's (or key's) offsets; None for collections and block scalars."""
        span = self._spans.get(pointer)
        if span is None:
            return None
        start = span.key_start if on_key and span.key_start is not None else span.start
        found = self.scalar_at(start)
        return (start, found[0]) if found is not None else None

    def scalar_at(self, offset: int | None) -> tuple[int, str | None] | None:
        """(end offset, style) of the flow or plain scalar token starting at `offset` (`style` None: plain)."""
        if offset is None:
            return None
        if self._scalars is None:
            self._scalars = _scalar_tokens(self.text)
        found = self._scalars.get(offset)
        if found is None or found[1] in ("|", ">"):
            return None
        return found

    # -- reading ------------------------------------------------------------------------------

    def _read(self, fast: bool = True) -> None:
        import yaml
        if fast and _libyaml_agrees(self.text) and hasattr(yaml, "CSafeLoader"):
            try:
                self._load(yaml, yaml.CSafeLoader)
                return
            except Exception:  # noqa: BLE001 - the pure-Python loader gives the error as safe_load would
                self._reset()
        failed: list = []  # the node whose construction raised (innermost first)
        try:
            self._load(yaml, yaml.SafeLoader, failed)
        except Exception as error:  # YAMLError, ValueError (bad timestamps, `0x_`), RecursionError, ...
            self.error = _describe_error(error, yaml, failed[0] if failed else None)
            self._reset()

    def _reset(self) -> None:
        self.loaded, self.value, self._spans = False, None, {}
        self._duplicates, self._booleans = [], {}

    def _load(self, yaml, loader_class, failed: list | None = None) -> None:
        loader = loader_class(self.text)
        try:
            root = loader.get_single_node()
            if root is None:  # an empty stream: safe_load returns None
                self.loaded, self.value = True, None
                return
            own_pairs = _own_pairs(root)  # before construction merges `<<` keys into the mappings
            if failed is not None:
                _note_failures(loader, failed)
            self.value = loader.construct_document(root)
            self.loaded = True
            self._index(root, own_pairs, loader)
        finally:
            loader.dispose()

    def _index(self, root, own_pairs: dict, loader) -> None:
        """Spans, duplicates and YAML 1.1 booleans, walking the node tree once (aliases not re-entered)."""
        import yaml
        seen: set[int] = set()
        stack = [(root, "", None)]
        while stack:
            node, pointer, key_start = stack.pop()
            self._spans[pointer] = Span(key_start, node.start_mark.index)
            if isinstance(node, yaml.ScalarNode):  # node.style None: a plain (unquoted) scalar
                if node.tag == _BOOL_TAG and not node.style and node.value not in _YAML12_BOOLEANS:
                    self._booleans[pointer] = node.value
                continue
            if id(node) in seen:  # an alias of a collection already indexed
                continue
            seen.add(id(node))
            if isinstance(node, yaml.SequenceNode):
                stack.extend((item, pointer_join(pointer, i), None) for i, item in enumerate(node.value))
                continue
            # Mappings: after construction node.value holds the merged pairs first, its own last;
            # like construct_mapping, the last pair for a key wins.
            winners = {}
            for key_node, value_node in node.value:
                winners[_key(loader, key_node)] = (key_node, value_node)
            for key, (key_node, value_node) in winners.items():
                stack.append((value_node, pointer_join(pointer, key), key_node.start_mark.index))
            first: dict = {}
            for key_node, _ in own_pairs.get(id(node), ()):
                key = _key(loader, key_node)
                if key in first:
                    self._duplicates.append(Duplicate(pointer_join(pointer, key), key_node.start_mark.index,
                                                     first[key]))
                else:
                    first[key] = key_node.start_mark.index


# Control characters, tabs, NEL, the BOM and surrogates (PyYAML's reader and libyaml's treat them
# differently), and the characters that start tags, escapes and directives; `|` and `>` where they may start
# a block scalar (`|#` loads in libyaml only): at a line's start or after a blank. Inside a plain scalar
# (`<file_sep>`, `a|b`) both loaders read them as text.
# (Tested piece by piece in `_outside_plain_subset`: one alternation tried at every offset is slower.)
_OUTSIDE_CHARACTERS = re.compile("[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_BLOCK_SCALAR = re.compile(r"(?:^|[ \t])[|>]", re.MULTILINE)
_INDENT = re.compile(r"^ *", re.MULTILINE)
_INTERPOLATION = re.compile(r"(?<=[\w$.:/ -])\$\{[\w.:/-]*\}|(?<=: )\$\{[\w.:/-]*\}"
                           r"|(?<=: )\$\{[\w.:/-]*(?:,[ \t]*[\w.:/-]+)+\}(?=[ \t]*$)", re.MULTILINE)  # ${oc.env:A, b}
_SIMPLE_FLOW = re.compile(r"(?<=: )(?:\[\]|\{\}|\[[\w.+/-]+(?:, [\w.+/-]+)*\])(?= *(?:#.*)?$)", re.MULTILINE)
# Flow collections of plain words after `key:` or `- ` (an anchor may name them), on one line or over several
# (`labels: &labels [" ", "a", ...` once its simple quoted strings are words), a trailing comma allowed: a list
# of words or of lists of words, or a mapping of words (`{"size": 224, "rate": 0}`); both loaders read these
# alike. Blanks here are spaces and newlines (a tab is already outside the subset).
_WORD = r"[\w.+/-]+"
_GAP = r"[ \n]*"
_WORDS = rf"\[{_GAP}{_WORD}(?:{_GAP},{_GAP}{_WORD})*{_GAP}(?:,{_GAP})?\]"
_ITEM = rf"(?:{_WORD}|{_WORDS})"  # a word, or a list of words: [[1, 2], [3, 4]]
_PAIR = rf"{_WORD}:[ \n]+{_WORD}"
_FLOW = re.compile(
    rf"(:[ \t]+(?:&[\w-]+[ \t]+)?|^[ \t]*-[ \t]+(?:&[\w-]+[ \t]+)?)(?:\[\]|\{{\}}"
    rf"|\[{_GAP}{_ITEM}(?:{_GAP},{_GAP}{_ITEM})*{_GAP}(?:,{_GAP})?\]"
    rf"|\{{{_GAP}{_PAIR}(?:{_GAP},{_GAP}{_PAIR})*{_GAP}(?:,{_GAP})?\}})"
    r"(?=[ \t]*$)", re.MULTILINE)
# a quoted scalar without escapes, on one line: text to both loaders, whatever it holds
_QUOTED = re.compile(r"\"[^\"\\\n]*\"|'[^'\n]*'")
# the same, of printable ASCII only, a double-quoted one with the escapes both loaders decode alike (not `\'`,
# which libyaml alone accepts; a code both read as the same character, or libyaml refuses, a surrogate or one past
# U+10FFFF, and then the pure-Python loader reads the file): taken out before the character test (a tab or control
# character inside still meets it: `0'\t'` loads in libyaml only)
_QUOTED_ASCII = re.compile(r"\"(?:[ !#-\[\]-~]|\\[\\\"/0abtnvfre N_LP]|\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}"
                           r"|\\U[0-9A-Fa-f]{8})*\"|'[ -&(-~]*'")
# A bracket inside a plain scalar of block context (`megatron_gpt--{val_loss:.2f}-{step}`, `a]`): text to both
# loaders; only one that opens a value (after `: `, `- `, at a line's start) starts a flow collection
_GLUED_BRACKET = re.compile(r"(?<=[^\s\[\]{},:])[\[\]{}]")


def _outside_plain_subset(text: str) -> bool:
    """Whether the text holds a character, tag, backslash, block scalar or directive outside the plain subset."""
    if "!" in text or "\\" in text or text.startswith("%") or "\n%" in text:
        return True
    if ("|" in text or ">" in text) and _BLOCK_SCALAR.search(text):
        return True
    return _OUTSIDE_CHARACTERS.search(text) is not None


def _without_comments(text: str) -> str:
    """Each line cut at its first `#` that starts a comment: at the line's start or after a space or tab."""
    if "#" not in text:
        return text
    lines = text.split("\n")
    for number, line in enumerate(lines):
        at = line.find("#")
        while at > 0 and line[at - 1] not in " \t":
            at = line.find("#", at + 1)
        if at >= 0:
            lines[number] = line[:at]
    return "\n".join(lines)


def _libyaml_agrees(text: str) -> bool:
    """Whether the text lies in the subset where libyaml and safe_load read the same nodes
    (marks count characters in both).

    Nesting stays far below the depth where safe_load's recursion fails (~300 levels): it is
    bounded by the indentation plus the `- ` that open nested sequences on one line. libyaml
    and PyYAML also differ on simple keys longer than 1024 characters, hence the line length.
    """
    if len(text) > 65536:
        return False
    # comments are skipped alike by both (a `#` after a space or at a line start; in a quoted string the cut
    # only hides characters from this test, never adds any); OmegaConf's `${a.b}` inside a plain scalar is text,
    # also nested (`${multiply:${model.d_model}, 4}`: the inner one first)
    text = _without_comments(text)
    for _ in range(4):
        if "${" not in text:
            break
        text, replaced = _INTERPOLATION.subn("x", text)
        if not replaced:
            break
    if "'" in text or '"' in text:  # a one-line quoted scalar of printable ASCII is text to both, `|>!` included
        text = _QUOTED_ASCII.sub("w", text)
    if _outside_plain_subset(text):
        return False
    if "[" in text or "{" in text:
        # flow collections differ in corners (`{a?}` loads in libyaml only); `[]`, `{}`, lists of plain
        # words and mappings of them, all that real configs hold, do not
        text = _SIMPLE_FLOW.sub("x", text)
        if "[" in text or "{" in text or "]" in text or "}" in text:
            text = _FLOW.sub(r"\1x", _QUOTED.sub("w", text))
        if "[" in text or "{" in text or "]" in text or "}" in text:
            text = _GLUED_BRACKET.sub("", text)
        if "[" in text or "{" in text or "]" in text or "}" in text:
            return False
    lines = text.split("\n")
    if max(map(len, lines)) > 1000:
        return False
    deepest = max((len(match) for match in _INDENT.findall(text)), default=0)
    # a block collection nests only by indenting, or by `- - x` on one line (flow collections are single
    # values here): a long list of items at one level (a docs table of contents) is not deep
    return deepest + max(line.count("- ") + line.count("[") + line.count("{") for line in lines) < 150


def _scalar_tokens(text: str) -> dict[int, tuple[int, str | None]]:
    """Scalar tokens by start offset: (end offset, style); empty when the text does not scan."""
    import yaml
    tokens = {}
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.ScalarToken):
                tokens[token.start_mark.index] = (token.end_mark.index, token.style)
    except yaml.YAMLError:
        return {}
    return tokens


def _own_pairs(root) -> dict[int, list]:
    """The pairs each mapping node holds as written, merge keys left out."""
    import yaml
    pairs, seen, stack = {}, set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, yaml.ScalarNode):
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            pairs[id(node)] = [(k, v) for k, v in node.value if k.tag != _MERGE_TAG]
            stack.extend(child for pair in node.value for child in pair)
        else:
            stack.extend(node.value)
    return pairs


def _key(loader, key_node):
    """The key as safe_load constructs it (after a successful load every key is a hashable scalar), for a
    pointer: bytes (`!!binary`), a date or a tuple as its repr, and an integer too long for str() (`? 0x` and
    thousands of hex digits) as its hex() text, which has no length limit."""
    if key_node.tag == _STR_TAG and type(key_node.value) is str:  # most keys: safe_load's str is the node's text
        return key_node.value
    from .values import key_token
    key = key_token(loader.construct_object(key_node, deep=True))
    return key if isinstance(key, (str, int, float, bool)) or key is None else repr(key)


def _note_failures(loader, failed: list) -> None:
    """Record in `failed` the node whose constructor raises something other than a YAMLError (which has its
    own marks): `0x_` and `!!int 0b2` raise ValueError from int(), `2001-13-45` from datetime(). The loader's
    own construct_object is called for every node, nested ones through `self`, so wrapping it on the
    instance sees the innermost node first."""
    import yaml
    construct = loader.construct_object

    def construct_object(node, deep=False):
        try:
            return construct(node, deep=deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception:
            if not failed:
                failed.append(node)
            raise

    loader.construct_object = construct_object


def _describe_error(error: BaseException, yaml, node=None) -> LoadError:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    if mark is None and node is not None and not isinstance(error, (yaml.YAMLError, RecursionError)):
        mark = node.start_mark  # a constructor's ValueError: at the value that raised it
    if isinstance(error, yaml.MarkedYAMLError):
        parts = [part for part in (error.context, error.problem) if part]
        message = "; ".join(parts) or type(error).__name__
    elif isinstance(error, yaml.reader.ReaderError):
        message = f"unacceptable character {error.character!r}: special characters are not allowed"
        return LoadError(message, error.position)
    elif isinstance(error, RecursionError):
        message = "nesting too deep for PyYAML (RecursionError)"
    else:
        message = f"{type(error).__name__}: {error}"
    return LoadError(message, mark.index if mark is not None else 0)
