"""Which releases a version constraint allows, in the three languages projects pin DeepSpeed in: PEP 440
(`>=0.14,<0.17`, `~=0.16.2`, `==0.16.*`: requirements files, pyproject.toml, setup.cfg, setup.py), Poetry
(`^0.16.2`, `~0.16`, `>=0.14 <0.17 || 0.13.1`) and conda match specs (`=0.16`, `0.16.9 py_0`).

A constraint is a tuple of alternatives, each a tuple of (operator, version) terms that must all hold;
ANY allows every release. Only final releases are compared (the ones dsconfig replays), so versions
compare by their numbers, zero-padded (`==0.16` is 0.16.0). Stdlib only: this module is on the lint path.
"""

from __future__ import annotations

import re

from .releases import key

Term = tuple[str, str]
Constraint = tuple[tuple[Term, ...], ...]
ANY: Constraint = ((),)
# Real constraints are a few dozen characters; a hostile one of 100,000 terms would cost seconds per release.
MAX_LENGTH = 400
# Patterns are strings, compiled on first use (re caches them).
TERM = r"(===|==|!=|~=|<=|>=|<|>)\s*(\S+)"
# A version's numbers (at most 9 digits each: int() refuses 4,300), then `.*`, or a suffix such as `rc1`, `.post1`.
VERSION = r"(?i)v?(\d{1,9}(?:\.\d{1,9})*)(\.\*|\.?[a-z+!-][\w.+!-]*)?"
# The name, extras, then the specifiers up to a marker (`;`) or a URL (`@`); PEP 508 allows parentheses.
REQUIREMENT = r"(?i)\s*{name}(?![\w.-])\s*(?:\[[^\]]*\])?\s*\(?(?P<spec>[^;@)]*)(?P<url>@\s*[^\s;]+)?"
# A pip line naming a version-control URL of deepspeed: `-e git+https://github.com/org/DeepSpeed.git@v0.16.4`,
# `git+https://...#egg=deepspeed`.
VCS_LINE = r"(?i)\s*(?:-e\s+|--editable[=\s]+)?(?P<url>(?:git|hg|svn|bzr)\+[^\s;]+)"
VCS_DEEPSPEED = r"(?i)[#&]egg=deepspeed(?![\w.-])|/deepspeed(?:\.git)?(?:@|#|$)"
# What a URL installs: a release tag (`...DeepSpeed.git@v0.16.4`, GitHub's archive of `v0.16.4`) or a release's
# own file (`deepspeed-0.16.4.tar.gz`) is that release, and a fork's tag of one (`v0.16.4-custom`) the release
# it started from; a branch or a commit is a release dsconfig cannot know.
URL_RELEASE = (r"(?i)(?:@|/archive/(?:refs/tags/)?|/deepspeed-)v?(\d{1,9}\.\d{1,9}\.\d{1,9})"
               r"(?=$|[#?&+-]|\.(?:tar\.gz|tgz|zip)$)")


def allows(constraint: Constraint, release: str) -> bool:
    return any(all(_holds(term, release) for term in terms) for terms in constraint)


def _holds(term: Term, release: str) -> bool:
    operator, version = term
    if operator == "===":
        return release == version
    wildcard = version.endswith(".*")
    want, have = key(version[:-2] if wildcard else version), key(release)
    if not want:
        return False
    if operator in ("==", "!="):
        same = have[:len(want)] == want if wildcard else _padded(have, want) == _padded(want, have)
        return same == (operator == "==")
    have, want = _padded(have, want), _padded(want, have)
    if operator == "~=":  # ~=0.16.2 is >=0.16.2, ==0.16.*
        prefix = len(key(version)) - 1
        return prefix > 0 and have >= want and have[:prefix] == want[:prefix]
    return {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want}[operator]


def _padded(numbers: tuple[int, ...], other: tuple[int, ...]) -> tuple[int, ...]:
    return numbers + (0,) * (len(other) - len(numbers))


def requirement(text: str, package: str = "deepspeed") -> tuple[str, Constraint] | None:
    """A PEP 508 requirement on deepspeed (`deepspeed[autotuning]>=0.14,<0.17; python_version>"3.9"`), or a
    direct reference (`deepspeed @ git+https://...@v0.16.4`, a pip line of a version-control URL of deepspeed):
    the requirement as written without its marker, and its constraint. None for anything else. `package`: another
    distribution's requirement (a URL of one is any release: only DeepSpeed's tags are known here)."""
    match = re.match(REQUIREMENT.format(name=re.escape(package)), text)
    deepspeed = package == "deepspeed"
    if match and match.group("url"):
        constraint = url_release(match.group("url")[1:]) if deepspeed else ANY
    elif match:
        constraint = pep440(match.group("spec"))
    else:
        vcs = re.match(VCS_LINE, text) if deepspeed else None
        constraint = url_release(vcs.group("url")) if vcs and re.search(VCS_DEEPSPEED, vcs.group("url")) else None
    return None if constraint is None else (" ".join(text.split(";")[0].split()), constraint)


def url_release(url: str) -> Constraint:
    """The release a URL installs when it names one (see URL_RELEASE), else ANY: pip takes whatever it holds."""
    path = url.split("://", 1)[-1]
    path = path[path.find("/"):] if "/" in path else ""  # after the host: a `user:token@` is no tag
    found = re.search(URL_RELEASE, path)
    return ((("==", found.group(1)),),) if found else ANY


def is_url(spec: str) -> bool:
    """Whether a pin as written installs from a URL (its release is the URL's, not a version specifier's)."""
    return "://" in spec


def pep440(text: str) -> Constraint | None:
    """A comma-separated specifier list (empty: any release); None when a piece is not a specifier."""
    if len(text) > MAX_LENGTH:
        return None
    terms = []
    for piece in filter(None, (piece.strip() for piece in text.split(","))):
        match = re.fullmatch(TERM, piece)
        version = match and (re.fullmatch(VERSION, match.group(2)) or match.group(1) == "===")  # === compares text
        if not version:
            return None
        terms.append((match.group(1), match.group(2).lstrip("vV") if match.group(1) != "===" else match.group(2)))
    return (tuple(terms),)


def poetry(text: str) -> Constraint | None:
    """Poetry's syntax: `^0.16.2` (>=0.16.2,<0.17.0), `~0.16` (>=0.16,<0.17), `0.16.9` (==), `*`, terms
    separated by commas or spaces, alternatives by `||`."""
    if len(text) > MAX_LENGTH:
        return None
    alternatives = []
    for part in text.split("||"):
        terms: list[Term] = []
        for piece in re.sub(r"([<>=!~^])\s+", r"\1", part).replace(",", " ").split():
            bound = re.fullmatch(VERSION, piece[1:]) if piece[0] in "^~" and piece[:2] != "~=" else None
            if bound and bound.group(2) != ".*":
                numbers = key(bound.group(1))
                # the upper bound: ^ bumps the first non-zero number (the last when all are 0), ~ the second
                # (the first when there is only one)
                kept = numbers[:2] if piece[0] == "~" else numbers[:next(
                    (index + 1 for index, number in enumerate(numbers) if number), len(numbers))]
                terms += [(">=", bound.group(1)), ("<", ".".join(map(str, kept[:-1] + (kept[-1] + 1,))))]
            elif piece != "*":
                parsed = pep440("==" + piece if piece[0].isdigit() else piece)
                if parsed is None:
                    return None
                terms += parsed[0]
        alternatives.append(tuple(terms))
    return tuple(alternatives)


def exact(version: str) -> Constraint | None:
    """`==version` (a lock file's), or None when it is not a version."""
    return ((("==", version),),) if re.fullmatch(VERSION, version) else None


def conda(text: str) -> Constraint | None:
    """A conda match spec after the name: `=0.16` (0.16.*), `=0.16.9=py311_0`, ` 0.16.9 py_0` (==),
    `>=0.14,<0.17`, `==0.16.9|==0.17.1`."""
    if len(text) > MAX_LENGTH:
        return None
    text = re.sub(r"\s*([,|<>=!~])\s*", r"\1", text.strip())
    if text[:1] == "=" and text[:2] != "==":
        text = "==" + text[1:].split("=")[0].rstrip("*.") + ".*"
    text = re.split(r"[\s\[]|(?<=[\w*])=", text)[0]  # the build string after `=`, a space or `[build=...]`
    alternatives = [pep440(",".join("==" + piece if piece[:1].isdigit() else piece for piece in part.split(",")))
                    for part in text.split("|")] if text else [ANY]
    return None if None in alternatives else tuple(terms for constraint in alternatives for terms in constraint)
