"""Read a config text exactly as DeepSpeed does (hjson 3.1.0), and record where every value sits.

DeepSpeed loads a config path with ``hjson.load(open(path), object_pairs_hook=...)``. This module
re-implements hjson 3.1.0's pure-Python decoder (``hjson/decoder.py`` is the specification) as an
iterative scanner: it accepts and rejects the same texts, builds the same Python values (types
included: hjson turns ``7.0`` into int 7, keeps ``1e20`` a float, reads ``+5`` as the string "+5"),
and on top of that records the span of every key and value, every hjson-only construct (a strict
JSON reader such as ``json.load`` in the HF Trainer rejects those), duplicate keys (DeepSpeed's
``object_pairs_hook`` rejects those) and quoteless values that probably do not mean what their
author thought.

hjson behaviour that looks like a bug is reproduced on purpose, because DeepSpeed sees it: see the
comments marked "hjson:". Only the standard library is used; hjson is not imported.
"""

from __future__ import annotations

import bisect
import re
import sys
from typing import NamedTuple

from .pointers import escape

__all__ = ["Duplicate", "Note", "Scan", "ScanError", "Span", "Trap", "line_starts", "position", "scan"]


class ScanError(Exception):
    """hjson would raise while loading the text.

    ``message`` is hjson's own message where it has one (``HjsonDecodeError.msg`` with ``%r``
    filled in, without the "line/column" suffix), ``offset`` the character offset hjson reports
    (``HjsonDecodeError.pos``) or, for the other exceptions, where the failing construct starts.
    ``hjson_exception`` names what hjson raises: "HjsonDecodeError", "IndexError", "OverflowError",
    "ValueError" or "RecursionError".
    """

    def __init__(self, message: str, offset: int, hjson_exception: str = "HjsonDecodeError"):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.hjson_exception = hjson_exception

    def __str__(self) -> str:
        return self.message


class Span(NamedTuple):
    """Character offsets into the text, end exclusive."""

    key_start: int | None  # start of the key token (quotes included); None for the root and array items
    key_end: int | None
    start: int  # start of the value token
    end: int  # end of the value token (quoteless string: end of its stripped text)


class Note(NamedTuple):
    """One hjson-only construct (strict JSON would reject it)."""

    kind: str  # see NOTE_KINDS
    start: int
    end: int
    pointer: str  # JSON pointer of the value/member concerned ("" for root-level notes)


NOTE_KINDS = (
    "comment", "trailing-comma", "missing-comma", "unquoted-key", "single-quotes",
    "quoteless-string", "multiline-string", "braceless-root", "empty-document", "byte-order-mark",
)


class Duplicate(NamedTuple):
    pointer: str  # pointer of the member whose key repeats (object pointer + key)
    key_start: int  # the repeated (later) key token
    key_end: int
    first_key_start: int  # the first occurrence


class Trap(NamedTuple):
    """A quoteless value hjson read as a string where a number, literal or more members were likely meant."""

    pointer: str
    start: int
    end: int
    text: str  # the string hjson produced
    reason: str


class Scan(NamedTuple):
    value: object  # exactly what hjson.loads(text) returns (a duplicated key keeps its LAST value)
    spans: dict  # JSON pointer -> Span for every value; for a duplicated key, the last occurrence
    notes: list  # Note, in text order
    duplicates: list  # Duplicate, in text order
    traps: list  # Trap, in text order
    max_depth: int  # deepest nesting of objects/arrays (root object = 1, scalar root = 0)


# ---------------------------------------------------------------------------------------------
# Lexical pieces (same sets of characters as hjson/decoder.py)

_WS = re.compile(r"[ \t\n\r]*")  # hjson's WHITESPACE; other Unicode spaces are NOT skipped
_EOL = re.compile(r"[\r\n]")
_DQ_SIMPLE = re.compile(r'"([^"\\\x00-\x1f]*)"')  # fast path: no escape, no control character
_SQ_SIMPLE = re.compile(r"'([^'\\\x00-\x1f]*)'")
_CHUNK = re.compile(r"([^'\"\\\x00-\x1f]*)(['\"\\\x00-\x1f])")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# Where a quoteless value may end if it is a literal or a number; a quoteless *string* only ends at EOL.
_TFNNS_STOP = re.compile(r"[,}\]#\r\n]|/[/*]")
# hjson's NUMBER_RE (JSON numbers plus trailing tabs/spaces). \d is Unicode-aware on purpose:
# hjson reads "1\u0662" as the int 12, and int()/float() accept those digits.
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?[\t ]*")
_KEY_STOP = re.compile(r"[:{}\[\],]")
_WS_RUN = re.compile(r"[ \t\n\r]+")
_LINE_BREAK = re.compile(r"\r\n?|\n")
_PUNCTUATORS = "{}[],:"
# Fast paths of the parser for strict-JSON shapes: what follows a value (`ws [, ws]`), and a
# plain `"key" ws : ws` (the caller checks that no comment follows).
_SEP = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*)?")
_MEMBER = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
# A plain ASCII number or literal directly followed by what ends it for hjson (see tfnns).
_PLAIN_SCALAR = re.compile(r"(?:(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?|(true|false|null))"
                           r"(?=[ \t]*(?:[,}\]#\r\n]|/[/*]|\Z))")
_LITERALS = {"true": True, "false": False, "null": None}
_PLAIN_START = frozenset("-0123456789tfn")
_VALUE_STATE, _MEMBER_STATE = 0, 1

_DECODE = "HjsonDecodeError"

# ---------------------------------------------------------------------------------------------
# Nesting depth. hjson's decoder is recursive; past some depth hjson.loads raises RecursionError.
#
# Measured on CPython 3.11.7 / hjson 3.1.0 (tests/test_jsonscan.py::test_recursion_threshold_*
# checks every construct below at depths around the threshold, against hjson itself).
# Each nesting level costs 2 Python frames (_scan_once + JSONObject/JSONArray). Counting frames
# from the caller of hjson.loads (loads itself = level 1): decode 2, raw_decode 3, scan_once 4,
# _scan_once 5, the root container 6 (a braceless root object: 5), so the container at depth d
# runs at level 4 + 2d (braceless root: 3 + 2d). Inside a container at level L hjson needs, by
# what it reads, up to: L+1 (getNext; an empty container), L+2 (a '#'/'//' comment: getEol; an
# unquoted key), L+3 (a quoted string, a quoteless value, a ''' string), L+4 (a \uXXXX escape:
# compat.unichr -> u), and raising an HjsonDecodeError costs 5 levels above the raising frame
# (HjsonDecodeError.__init__ -> errmsg -> linecol -> str methods). On 3.11 calls of builtins
# with the METH_O/NOARGS/VARARGS conventions (re.match, list.append, int(), chr()) take a level
# too. A frame at level X can run iff X <= B, B being what is left of the recursion limit.
#
# Called from a script's top level, B = sys.getrecursionlimit() - 1 = 999 by default: `[[...]]`
# loads with 497 levels and raises RecursionError with 498; `{"a": {"a": ... 1}}` loads with 496
# levels and raises with 497; an error near the bottom becomes a RecursionError a level or two
# earlier still. In general hjson manages about (sys.getrecursionlimit() - caller frames - 5) / 2
# levels.
#
# B depends on how deep the caller's stack already is (and on C calls in it), so scan() measures
# it for real when it matters: a throw-away recursion until RecursionError, counted from scan's
# own frame, gives what an hjson.loads call in place of scan() would have. The probe (~0.2 ms)
# only runs once a document is deeper than a level safely below that (_PROBE_MARGIN frames
# under the estimate from sys.getrecursionlimit(), and at most level 100), i.e. never for real
# configs. Other Python versions count C calls differently, so there the threshold may be off
# by a level.
_FRAMES_PER_LEVEL = 2
_RAISE_COST = 5  # frames needed above the frame that raises an HjsonDecodeError
_PROBE_MARGIN = 200  # frames of slack for C-level recursion in the caller's stack
_MAX_COST = 7  # no operation inside a container at level L needs a frame above L + 7


def _probe(level: int) -> int:
    """Recurse until RecursionError; return the deepest level reached."""
    try:
        return _probe(level + 1)
    except RecursionError:
        return level


def _stack_depth(frame) -> int:
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


# ---------------------------------------------------------------------------------------------
# Traps: quoteless strings that were probably meant as something else.

_LOOKS_NUMERIC = re.compile(r"[+-]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?")
_NAN_INF = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_RADIX = re.compile(r"[+-]?0[xXoObB][0-9a-fA-F_]+")
_SWALLOWED = re.compile(r"[,}\]]|\s(?:#|//|/\*)")
_WRONG_LITERALS = {"true": "true", "false": "false", "null": "null", "none": "null", "nil": "null"}


def _trap_reason(text: str, root: bool) -> str | None:
    m = _SWALLOWED.search(text)
    if m is not None:
        what = m.group().strip()
        if len(what) == 1 and what in ",}]":
            return f"the quoteless string runs to the end of the line and swallowed '{what}'"
        return f"the quoteless string runs to the end of the line and swallowed the '{what}' comment"
    if _NAN_INF.fullmatch(text):
        return f"'{text}' is not a number in hjson"
    if _RADIX.fullmatch(text):
        return f"'{text}': hex, octal and binary numbers are not allowed"
    lowered = text.lower()
    if lowered in _WRONG_LITERALS:
        return f"'{text}' is not a literal in hjson (write {_WRONG_LITERALS[lowered]})"
    if _LOOKS_NUMERIC.fullmatch(text) and any(c.isdigit() for c in text):
        if text[0] == "+":
            return f"'{text}' is not an hjson number (no leading +)"
        if "_" in text:
            return f"'{text}': underscores are not allowed"
        mantissa = text.lstrip("-").split("e")[0].split("E")[0]
        if mantissa.startswith("."):
            return f"'{text}' needs a leading 0"
        if len(mantissa.split(".")[0]) > 1 and mantissa[0] == "0":
            return f"'{text}': leading zeros"
        if mantissa.endswith("."):
            return f"'{text}' needs a digit after the decimal point"
    if root and ":" in text:
        return "hjson could not read the document as an object and took its first line as one string"
    return None


def _number(integer: str, frac: str | None, exp: str | None, offset: int):
    """The value hjson gives a number token (the groups of _NUMBER)."""
    if frac or exp:
        text = integer + (frac or "") + (exp or "")
        value = float(text)
        # hjson: `if int(res) == res and abs(res) < 1e10: res = int(res)`. So 7.0 and 5e8 become
        # ints, 1e10 and 0.5 stay floats, and int(inf) raises OverflowError (1e400).
        if value == _INF or value == -_INF:
            raise ScanError(f"number {text} overflows: hjson raises OverflowError "
                            "(cannot convert float infinity to integer)", offset, "OverflowError")
        if value.is_integer() and abs(value) < 1e10:
            return int(value)
        return value
    try:
        return int(integer)
    except ValueError as error:  # more digits than sys.get_int_max_str_digits() allows
        raise ScanError(f"integer with {len(integer)} digits: hjson raises ValueError ({error})",
                        offset, "ValueError") from None


_INF = float("inf")

# ---------------------------------------------------------------------------------------------


class _Frame:
    """An open object or array."""

    __slots__ = ("braceless", "firsts", "is_obj", "ke", "key", "ks", "level", "ptr", "start", "value")

    def __init__(self, is_obj, ptr, ks, ke, start, level, braceless=False):
        self.is_obj = is_obj
        self.value = {} if is_obj else []
        self.ptr = ptr  # this container's own pointer and key span (restored when it closes)
        self.ks = ks
        self.ke = ke
        self.start = start
        self.level = level  # hjson frame level of its JSONObject/JSONArray call
        self.braceless = braceless
        self.firsts = {} if is_obj else None  # key -> offset of its first key token
        self.key = None  # key of the member being read


class _Scanner:
    def __init__(self, text: str, scan_depth: int):
        self.text = text
        self.n = len(text)
        self.scan_depth = scan_depth  # absolute stack depth of scan()'s frame
        limit = sys.getrecursionlimit()
        # Until measured, assume every frame level up to `watch` is available (see above).
        self.budget = None
        self.watch = min(100, limit - scan_depth - _PROBE_MARGIN)
        self.root_scalar = False  # reading the root as a single value (hjson's second attempt)
        self.container_ptr = ""  # pointer of the innermost open container (for comment notes)
        self.reset()

    def reset(self, notes=(), comment_mark=0):
        self.spans = {}
        self.notes = list(notes)
        self.duplicates = []
        self.traps = []
        self.max_depth = 0
        self.comment_mark = comment_mark  # comments before this offset are already noted
        self.stack = []  # the parser's open containers

    # -- hjson's frame budget ----------------------------------------------------------------

    def need(self, level: int, offset: int, depth: int | None = None) -> None:
        """hjson needs a frame (or a counted C call) at `level`; raise its RecursionError if none is left."""
        if self.budget is None:
            here = _stack_depth(sys._getframe())
            top = _probe(here + 1)
            self.budget = top - self.scan_depth + 1
            self.watch = self.budget
        if level > self.budget:
            if depth is None:
                depth = len(self.stack)
            raise ScanError(
                f"nesting too deep: at depth {depth} hjson.loads raises RecursionError (its recursive "
                f"parser uses {_FRAMES_PER_LEVEL} stack frames per level; recursion limit "
                f"{sys.getrecursionlimit()})", offset, "RecursionError")

    def fail(self, message: str, pos: int, raiser_level: int):
        """Raise hjson's HjsonDecodeError (constructed by a frame at `raiser_level`)."""
        if raiser_level + _RAISE_COST > self.watch:
            self.need(raiser_level + _RAISE_COST, pos)
        raise ScanError(message, pos)

    # -- getNext -----------------------------------------------------------------------------

    def skip(self, p: int, level: int):
        """hjson's getNext called by a frame at `level`: skip whitespace and comments.

        Returns (character at the new position or "" at the end, new position).
        """
        text = self.text
        if level + 1 > self.watch:
            self.need(level + 1, p)
        while True:
            p = _WS.match(text, p).end()
            c = text[p:p + 1]
            if c == "#" or (c == "/" and text[p + 1:p + 2] == "/"):
                if level + 2 > self.watch:
                    self.need(level + 2, p)  # getEol
                m = _EOL.search(text, p)
                end = m.start() if m else self.n
            elif c == "/" and text[p + 1:p + 2] == "*":
                end = text.find("*/", p + 2)
                if end < 0:
                    # hjson: getNext indexes s[end] without a bound check, so an unclosed block
                    # comment is an IndexError, not a decode error.
                    raise ScanError("unterminated /* comment: hjson raises IndexError "
                                    "(string index out of range)", p, "IndexError")
                end += 2
            else:
                return c, p
            if p >= self.comment_mark:
                self.notes.append(Note("comment", p, end, self.container_ptr))
                self.comment_mark = end
            p = end

    # -- strings -----------------------------------------------------------------------------

    def string(self, q: int, level: int):
        """hjson's scanstring for the quote at q, run in a frame at `level`. Returns (str, end)."""
        text = self.text
        if level + 1 > self.watch:
            self.need(level + 1, q)  # its regex match is a counted C call
        quote = text[q]
        m = (_DQ_SIMPLE if quote == '"' else _SQ_SIMPLE).match(text, q)
        if m is not None:
            return m.group(1), m.end()
        chunks = []
        p = q + 1
        while True:
            m = _CHUNK.match(text, p)
            if m is None:
                self.fail("Unterminated string starting at", q, level)
            content, term = m.groups()
            p = m.end()
            if content:
                chunks.append(content)
            if term == quote:
                return "".join(chunks), p
            if term == '"' or term == "'":  # the other quote character is just text
                chunks.append(term)
                continue
            if term != "\\":
                # hjson reports the character *after* the control character (%r of doc[pos]).
                self.fail(f"Invalid control character {text[p:p + 1]!r} at", p, level)
            if p >= self.n:
                self.fail("Unterminated string starting at", q, level)
            esc = text[p]
            if esc != "u":
                char = _ESCAPES.get(esc)
                if char is None:
                    self.fail(f"Invalid \\X escape sequence {esc!r}", p, level)
                chunks.append(char)
                p += 1
                continue
            # \uXXXX. hjson parses the 4 characters with int(x, 16), so it also accepts signs,
            # surrounding whitespace, underscores and a "0x" after a space (" 0x1"); it only rejects
            # an "x" in second position. A negative code point makes chr() raise ValueError.
            msg = "Invalid \\uXXXX escape sequence"
            hexa = text[p + 1:p + 5]
            if len(hexa) != 4 or hexa[1:2] in ("x", "X"):
                self.fail(msg, p - 1, level)
            try:
                uni = int(hexa, 16)
            except ValueError:
                self.fail(msg, p - 1, level)
            backslash = p - 1
            p += 5
            if uni & 0xFC00 == 0xD800 and text[p:p + 2] == "\\u":
                hexa2 = text[p + 2:p + 6]
                if len(hexa2) == 4 and hexa2[1:2] not in ("x", "X"):
                    try:
                        uni2 = int(hexa2, 16)
                    except ValueError:
                        self.fail(msg, p, level)
                    if uni2 & 0xFC00 == 0xDC00:
                        uni = 0x10000 + (((uni - 0xD800) << 10) | (uni2 - 0xDC00))
                        p += 6
            if level + 2 > self.watch:
                self.need(level + 2, backslash)  # compat.unichr -> u / chr
            try:
                chunks.append(chr(uni))
            except (ValueError, OverflowError) as error:
                raise ScanError(f"\\u escape {text[backslash:p]!r} gives code point {uni}: hjson raises "
                                f"{type(error).__name__} ({error})", backslash, type(error).__name__) from None

    def mlstring(self, p: int, level: int):
        """hjson's mlscanstring for the ''' at p, called at frame `level`. Returns (str, end)."""
        text = self.text
        n = self.n
        if level > self.watch:
            self.need(level, p)
        # hjson: the indent is the distance back to the previous '\n'. It walks backwards with
        # s[end - indent - 1], and a negative index wraps around: with no '\n' before the ''',
        # the last '\n' of the whole text is used, and with none at all it raises IndexError.
        nl = text.rfind("\n", 0, p)
        if nl >= 0:
            indent = p - nl - 1
        else:
            nl = text.rfind("\n")
            if nl < 0:
                raise ScanError("''' string in a text without any line break: hjson raises IndexError "
                                "(string index out of range)", p, "IndexError")
            indent = p - 1 + n - nl
        if level + 1 > self.watch:
            self.need(level + 1, p)  # skipIndent
        end = self._skip_indent(p + 3, -1)
        if end >= n:
            raise ScanError("''' at the end of the text: hjson raises IndexError (string index out of range)",
                            p, "IndexError")
        if text[end] == "\n":
            end = self._skip_indent(end + 1, indent)
        out = []
        triple = 0
        while True:
            ch = text[end:end + 1]
            if ch == "":
                self.fail("Bad multiline string", end, level)
            if ch == "'":
                triple += 1
                end += 1
                if triple == 3:
                    value = "".join(out)
                    value = value.removesuffix("\n")
                    return value, end
                continue
            if triple:
                out.append("'" * triple)
                triple = 0
            if ch == "\n":
                out.append(ch)
                end = self._skip_indent(end + 1, indent)
            else:
                if ch != "\r":  # hjson drops every CR inside a ''' string
                    out.append(ch)
                end += 1

    def _skip_indent(self, p: int, count: int) -> int:
        text = self.text
        n = self.n
        while p < n and text[p] in " \t\r" and count != 0:
            p += 1
            count -= 1
        return p

    # -- quoteless values --------------------------------------------------------------------

    def tfnns(self, p: int, level: int, ptr: str):
        """hjson's scantfnns at p (called at frame `level`): a literal, a number or a quoteless string.

        Returns (value, start, end, resume): start/end delimit the (stripped) token, resume is
        where hjson continues (after trailing whitespace of any kind, up to the stop character).
        """
        text = self.text
        if level + 1 > self.watch:
            self.need(level + 1, p)
        c = text[p]
        if c in _PUNCTUATORS:
            self.fail("Found a punctuator character when expecting a quoteless string (check your syntax)",
                      p, level)
        # A literal or number ends at the first , } ] # // /* or line break; hjson only tests there
        # (a later stop cannot help: the earlier stop character would be part of the token).
        m = _TFNNS_STOP.search(text, p)
        stop = m.start() if m else self.n
        token = text[p:stop]
        if c == "n" or c == "t" or c == "f":
            word = token.rstrip()  # hjson uses str.strip(): any Unicode whitespace may follow
            if word == "null" or word == "true" or word == "false":
                return (None if word == "null" else word == "true"), p, p + len(word), stop
        elif c == "-" or "0" <= c <= "9":
            num = _NUMBER.match(text, p)
            if num is not None and num.end() == stop:
                integer, frac, exp = num.groups()
                token_end = num.end(3) if exp else num.end(2) if frac else num.end(1)
                return _number(integer, frac, exp, p), p, token_end, stop
        # A quoteless string: it always runs to the end of the line, whatever it contains.
        if m is not None and text[stop] in "\r\n":
            eol = stop
        else:
            m = _EOL.search(text, stop)
            eol = m.start() if m else self.n
        raw = text[p:eol]
        value = raw.strip()
        start = p + len(raw) - len(raw.lstrip())
        end = start + len(value)
        self.notes.append(Note("quoteless-string", start, end, ptr))
        reason = _trap_reason(value, ptr == "" and self.root_scalar)
        if reason is not None:
            self.traps.append(Trap(ptr, start, end, value, reason))
        return value, start, end, eol

    # -- keys --------------------------------------------------------------------------------

    def key(self, p: int, level: int, obj_ptr: str):
        """hjson's scanKeyName at p (after getNext), called at frame `level`.

        Returns (key, key_start, key_end, position after the key).
        """
        text = self.text
        if level + 2 > self.watch:
            self.need(level + 2, p)  # scanKeyName and its getNext
        c = text[p:p + 1]
        if c == '"' or c == "'":
            key, end = self.string(p, level + 2)
            if c == "'":
                self.notes.append(Note("single-quotes", p, end, obj_ptr + "/" + escape(key)))
            return key, p, end, end
        m = _KEY_STOP.search(text, p)
        if m is None:
            self.fail("Bad key name (eof)", self.n, level + 1)
        q = m.start()
        stop = text[q]
        if stop != ":":
            self.fail(f"Found '{stop}' where a key name was expected (check your syntax or use quotes if "
                      "the key name includes {}[],: or whitespace)", p, level + 1)
        if q == p:
            self.fail("Found ':' but no key name (for an empty key name use quotes)", p, level + 1)
        ws = _WS_RUN.search(text, p, q)
        if ws is None:
            key = text[p:q]  # hjson: not stripped, so a trailing "\f" stays in the key
        elif ws.end() == q:
            key = text[p:q].rstrip()  # hjson: str.rstrip() removes any Unicode whitespace here
        else:
            self.fail("Found whitespace in your key name (use quotes to include)", ws.end() - 1, level + 1)
        # The token keeps at least one character, so a key stripped down to "" stays locatable.
        end = p + max(len(key), 1)
        self.notes.append(Note("unquoted-key", p, end, obj_ptr + "/" + escape(key)))
        return key, p, end, q

    # -- scalars -----------------------------------------------------------------------------

    def scalar(self, p: int, level: int, ptr: str):
        """A non-container value at p, read by _scan_once at `level` + 1.

        Returns (value, start, end, resume) like tfnns."""
        text = self.text
        c = text[p:p + 1]
        if c == "":
            self.fail("Expecting value", p, level + 1)
        if c == '"' or c == "'":
            if text.startswith("'''", p):
                value, end = self.mlstring(p, level + 2)
                self.notes.append(Note("multiline-string", p, end, ptr))
                return value, p, end, end
            value, end = self.string(p, level + 2)
            if c == "'":
                self.notes.append(Note("single-quotes", p, end, ptr))
            return value, p, end, end
        return self.tfnns(p, level + 2, ptr)

    # -- the parser --------------------------------------------------------------------------

    def parse(self, p: int, braceless: bool):
        """Read one value at p (after getNext), or a braceless root object. Returns (value, end).

        Iterative: an explicit stack of open containers replaces hjson's recursion. The common
        strict-JSON shapes (whitespace, `"key":`, `,`, plain strings) take inline fast paths; they
        are only taken while hjson's frame budget cannot run out (`deep` is false), everything
        else goes through the methods above, which mirror hjson function by function.
        """
        text = self.text
        spans = self.spans
        notes = self.notes
        ws = _WS.match
        sep = _SEP.match
        member = _MEMBER.match
        dq = _DQ_SIMPLE.match
        plain = _PLAIN_SCALAR.match
        new_span = tuple.__new__
        stack: list[_Frame] = []
        self.stack = stack
        self.container_ptr = ""
        ptr, ks, ke = "", None, None
        level = 4  # frame level of the function whose _scan_once reads the next value
        deep = level + _MAX_COST > self.watch
        missing = -1  # end of the previous member when the comma between them is missing
        if braceless:
            frame = _Frame(True, "", None, None, p, 5, braceless=True)  # scan_object_once -> JSONObject
            stack.append(frame)
            spans[""] = None
            self.max_depth = 1
            level = 5
            deep = level + _MAX_COST > self.watch
            self.skip(p, level)  # JSONObject's first getNext (a no-op here, but it costs a frame)
            state = _MEMBER_STATE
        else:
            state = _VALUE_STATE

        while True:
            if state == _VALUE_STATE:
                c = text[p:p + 1]
                if c == '"' and not deep and (m := dq(text, p)) is not None:
                    value, vs, ve = m.group(1), p, m.end()
                    resume = ve
                elif c in _PLAIN_START and not deep and (m := plain(text, p)) is not None:
                    word = m.group(4)
                    if word is None:
                        value = _number(m.group(1), m.group(2), m.group(3), p)
                    else:
                        value = _LITERALS[word]
                    vs, ve = p, m.end()
                    resume = ve  # hjson stops after the trailing blanks; skipping them is the same
                elif c == "{" or c == "[":
                    child = level + 2  # _scan_once, then JSONObject/JSONArray
                    if child > self.watch:
                        self.need(child, p, len(stack) + 1)
                    frame = _Frame(c == "{", ptr, ks, ke, p, child)
                    stack.append(frame)
                    self.max_depth = max(self.max_depth, len(stack))
                    self.container_ptr = ptr
                    spans[ptr] = None  # keeps the spans dict in text order
                    level = child
                    deep = level + _MAX_COST > self.watch
                    missing = -1
                    p = ws(text, p + 1).end()
                    ch = text[p:p + 1]
                    if deep or ch == "#" or ch == "/":
                        ch, p = self.skip(p, level)
                    if ch == ("}" if frame.is_obj else "]"):
                        stack.pop()
                        value, vs, ve = frame.value, frame.start, p + 1
                        resume = ve
                        level = stack[-1].level if stack else 4
                        deep = level + _MAX_COST > self.watch
                    elif frame.is_obj:
                        state = _MEMBER_STATE
                        continue
                    elif ch == "":
                        self.fail("End of input while parsing an array (did you forget a closing ']'?)", p, level)
                    else:
                        ptr, ks, ke = ptr + "/0", None, None
                        continue
                else:
                    value, vs, ve, resume = self.scalar(p, level, ptr)

                # -- a value is complete: store it and look at what follows ----------------------
                while True:
                    spans[ptr] = new_span(Span, (ks, ke, vs, ve))
                    if not stack:
                        return value, resume
                    frame = stack[-1]
                    if frame.is_obj:
                        frame.value[frame.key] = value
                    else:
                        frame.value.append(value)
                    m = sep(text, resume)
                    p = m.end()
                    ch = text[p:p + 1]
                    if deep or ch == "#" or ch == "/":
                        # comments (or a frame budget to check): hjson's getNext, ',', getNext
                        self.container_ptr = frame.ptr
                        ch, p = self.skip(resume, level)
                        comma = -1
                        if ch == ",":
                            comma = p
                            ch, p = self.skip(p + 1, level)
                    else:
                        comma = m.start(1)
                    if frame.is_obj:
                        closing = ch == "" if frame.braceless else ch == "}"
                    else:
                        closing = ch == "]"
                    if not closing:
                        break
                    if comma >= 0:
                        notes.append(Note("trailing-comma", comma, comma + 1, ptr))
                    stack.pop()
                    if frame.braceless:
                        # hjson's braceless root ends at the end of the text; its span at its last value.
                        spans[""] = new_span(Span, (None, None, frame.start, ve))
                        return frame.value, p
                    value, vs, ve = frame.value, frame.start, p + 1
                    resume = ve
                    ptr, ks, ke = frame.ptr, frame.ks, frame.ke
                    level = stack[-1].level if stack else 4
                    deep = level + _MAX_COST > self.watch
                self.container_ptr = frame.ptr
                missing = ve if comma < 0 else -1
                if not frame.is_obj:
                    ptr, ks, ke = frame.ptr + "/" + str(len(frame.value)), None, None
                    if missing >= 0:
                        notes.append(Note("missing-comma", missing, p, ptr))
                        missing = -1
                    continue  # state stays _VALUE_STATE
                state = _MEMBER_STATE

            # -- state == _MEMBER_STATE: read `key :` at p for the object on top of the stack ----
            frame = stack[-1]
            if not deep and (m := member(text, p)) is not None and text[m.end():m.end() + 1] not in ("#", "/"):
                key = m.group(1)
                ks, ke, p = m.start(), m.end(1) + 1, m.end()
            else:
                key, ks, ke, p = self.key(p, level, frame.ptr)
                ch, p = self.skip(p, level)
                if ch != ":":
                    self.fail("Expecting ':' delimiter", p, level)
                ch, p = self.skip(p + 1, level)
            ptr = frame.ptr + "/" + escape(key)
            frame.key = key
            if missing >= 0:
                notes.append(Note("missing-comma", missing, ks, ptr))
                missing = -1
            first = frame.firsts.get(key)
            if first is None:
                frame.firsts[key] = ks
            else:
                self.duplicates.append(Duplicate(ptr, ks, ke, first))
                # The earlier value is replaced: forget its spans (and its children's).
                prefix = ptr + "/"
                for stale in [k for k in spans if k == ptr or k.startswith(prefix)]:
                    del spans[stale]
            state = _VALUE_STATE


def scan(text: str) -> Scan:
    """Read `text` as hjson.loads(text) does; raise ScanError where it would raise."""
    scanner = _Scanner(text, _stack_depth(sys._getframe()))
    n = len(text)
    # hjson strips a BOM: U+FEFF, or its UTF-8 bytes read as Latin-1 ("\xef\xbb\xbf").
    idx = 0
    if text[:1] == "\ufeff":
        idx = 1
        scanner.notes.append(Note("byte-order-mark", 0, 1, ""))  # json.loads: "Unexpected UTF-8 BOM"
    elif text[:3] == "\xef\xbb\xbf":
        idx = 3
    ch, p = scanner.skip(idx, 3)  # raw_decode's getNext
    if idx == 0 and ch == "":
        # hjson: a blank or comment-only text is {} (but not after a BOM: that is an error below).
        scanner.skip(0, 2)  # decode's getNext
        scanner.notes.append(Note("empty-document", 0, n, ""))
        scanner.spans[""] = Span(None, None, 0, 0)
        scanner.max_depth = 1
        return _result(scanner, {})
    if ch == "{" or ch == "[":
        value, end = scanner.parse(p, False)
    else:
        # hjson tries a root object without braces; if that raises an HjsonDecodeError it tries
        # a single value instead, and if *that* fails for any reason it re-raises the first error.
        kept = (list(scanner.notes), scanner.comment_mark)  # comments before the root
        try:
            value, end = scanner.parse(p, True)
            scanner.notes.append(Note("braceless-root", 0, n, ""))
        except ScanError as error:
            if error.hjson_exception != _DECODE:
                raise
            scanner.reset(*kept)
            scanner.root_scalar = True
            try:
                value, end = scanner.parse(p, False)
            except ScanError:
                raise error from None
    ch, end = scanner.skip(end, 2)  # decode's getNext
    if end != n:
        scanner.fail("Extra data", end, 2)
    return _result(scanner, value)


def _result(scanner: _Scanner, value) -> Scan:
    notes = sorted(scanner.notes, key=lambda note: (note.start, -note.end))  # outer notes first
    return Scan(value, scanner.spans, notes, scanner.duplicates, scanner.traps, scanner.max_depth)


def line_starts(text: str) -> list[int]:
    """Offsets where each line starts. CRLF, CR and LF each end a line."""
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def position(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based (line, column) of `offset`; the column counts characters."""
    line = bisect.bisect_right(starts, offset) - 1
    return line + 1, offset - starts[line] + 1
