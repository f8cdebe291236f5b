"""Which DeepSpeed release dsconfig replays: `choose()` picks it and says why.

In order: `--deepspeed-version`; `deepspeed-version` in [tool.dsconfig]; the installed `deepspeed`
distribution (its metadata, never the package); the project's pin; the newest supported release.
The pin is looked for from the linted path up to the project root (the folder holding `.git`; without
one, the working directory: dsconfig.boundary.folders_up_to_ceiling), and the nearest folder holding
one wins (pinfiles.py reads the files). In a folder, a locked version (uv.lock, poetry.lock) beats a
written constraint, which beats a bare name; among equals, the first file in `pinfiles.READERS`
order wins. A constraint resolves to the newest supported release it allows (specifiers.py
evaluates constraints).

Stdlib only: this module is on the lint path.
"""

from __future__ import annotations

import os
import re
import sys
from typing import NamedTuple

from ..values import brief
from .pinfiles import Pin, cut, listing, pins_in, read_text
from .releases import NEWEST, SUPPORTED, key

OLDEST = SUPPORTED[0]

# Patterns are strings, compiled on first use (re caches them): most runs need none of them.
GIVEN = r"[vV]?(\d{1,9})\.(\d{1,9})\.(\d{1,9})(\+[\w.]+)?"  # 9 digits: int() refuses 4,300
RELEASE = r"(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?!\d)"  # leads "0.17.2.dev0" and "0.16.9+cu121"


class VersionError(ValueError):
    """A `--deepspeed-version` (or `deepspeed-version` setting) dsconfig cannot replay; one line."""


class Choice(NamedTuple):
    version: str  # one of SUPPORTED, or "all"
    reason: str  # short, shown to the user
    source: str  # "option" | "settings" | "installed" | "pin" | "default"
    file: str | None = None  # the file holding the pin, when source == "pin"
    line: int | None = None


def choose_one(explicit: str | None, start: str | None, command: str) -> Choice:
    """`choose` for a command that works with one release (estimate, generate): `all` is a VersionError."""
    choice = choose(explicit, start)
    if choice.version == "all":
        raise VersionError(f"--deepspeed-version all is for lint; {command} works with one release")
    return choice


def choose(explicit: str | None, start: str | None, *, settings_value: str | None = None,
           settings_file: str | None = None) -> Choice:
    """The release to replay. `start` is the file or folder being linted (None: the working directory)."""
    if explicit is not None:
        return _given(explicit, "option", "--deepspeed-version {}", "")
    if settings_value is not None:
        where = settings_file or "the settings"
        return _given(settings_value, "settings", f"deepspeed-version {{}} in {where}", f"{where}: `deepspeed-version`: ")
    note, choice = _installed()
    if choice is not None:
        return choice
    choice = _pinned(start)
    if choice is None:
        missing = "no pin found" if note else "no installed deepspeed, no pin found"
        choice = Choice(NEWEST, f"newest supported release ({missing})", "default")
    return choice._replace(reason=f"{note}; using {choice.version}: {choice.reason}") if note else choice


def _given(value, source: str, label: str, prefix: str) -> Choice:
    """The release the user named; `label` says where ("--deepspeed-version {}"), `prefix` starts an error."""
    if not isinstance(value, str):
        raise VersionError(f"{prefix}must be a string such as \"0.16.9\", or \"all\" (got {brief(value, 40)})")
    text = value.strip()
    if text.lower() == "all":  # the caller replays every release
        return Choice("all", f"every supported release ({label.format('all')})", source)
    match = re.fullmatch(GIVEN, text)
    if match is None:
        raise VersionError(f"{prefix}{brief(text, 40)} is not a DeepSpeed version: write one like 0.16.9, or all")
    version = _release(match)
    if version not in SUPPORTED:
        raise VersionError(prefix + _unsupported(version))
    return Choice(version, label.format(version), source)


def _release(match: re.Match) -> str:
    return ".".join(str(int(number)) for number in match.groups()[:3])  # "v0.016.9" -> "0.16.9"


def _unsupported(version: str) -> str:
    if key(version) < key(OLDEST):
        return f"DeepSpeed {version} is not supported: dsconfig replays {OLDEST} to {NEWEST}"
    if key(version) > key(NEWEST):
        return f"DeepSpeed {version} is not supported yet: the newest release dsconfig replays is {NEWEST}"
    return f"DeepSpeed {version} is not a release: the nearest are {_before(version)} and " + next(
        release for release in SUPPORTED if key(release) > key(version))


def _before(version: str) -> str:
    return [release for release in SUPPORTED if key(release) < key(version)][-1]


def _installed() -> tuple[str, Choice | None]:
    """(a note for the reason when it cannot be used, the choice) from the installed deepspeed."""
    found = _installed_version()
    if found is None:
        return "", None
    match = re.match(RELEASE, found)
    if match is None:
        what = f"version {brief(found, 40)} is no release number" if found else "metadata gives no version"
        return f"the installed deepspeed's {what}", None
    shown, version = f"installed deepspeed {cut(found)}", _release(match)
    if key(version) < key(OLDEST):
        return f"{shown} is older than {OLDEST}, the oldest release dsconfig replays", None
    if key(version) > key(NEWEST):  # newer releases add options: the newest replayed one is the closest
        reason = f"{shown} is newer than {NEWEST}, the newest release dsconfig replays; using {NEWEST}"
        return "", Choice(NEWEST, reason, "installed")
    if version not in SUPPORTED:  # a build from a commit between two releases
        version = _before(version)
        return "", Choice(version, f"{shown} is not a release; using {version}, the one before it", "installed")
    return "", Choice(version, shown if found == version else f"{shown} (release {version})", "installed")


def _installed_version() -> str | None:
    """The `Version:` of the first deepspeed-*.dist-info (or .egg-info) on sys.path, as
    importlib.metadata.version("deepspeed") finds it ("" when unreadable), without importing
    importlib.metadata, whose import and lookup add about 27 ms to a cold `dsconfig lint` of about 60 ms
    (measured; this lookup adds under 5 ms)."""
    for entry in sys.path:
        for name in listing(entry or "."):
            stem, _, suffix = name.lower().rpartition(".")
            if suffix in ("dist-info", "egg-info") and re.sub(r"[-_.]+", "_", stem.split("-")[0]) == "deepspeed":
                found = os.path.join(entry or ".", name)
                text = next(filter(None, (read_text(os.path.join(found, name), environment=True)
                                          for name in ("METADATA", "PKG-INFO", ""))), "")
                header = re.split(r"\r?\n\r?\n", text, maxsplit=1)[0]  # the long description follows
                version = re.search(r"^Version:[ \t]*(\S*)", header, re.MULTILINE)
                return version.group(1) if version else ""
    return None


# -- the project's pin --------------------------------------------------------------------------------------

def _pinned(start: str | None) -> Choice | None:
    pin = project_pin(start)
    return _resolve(pin) if pin is not None else None


def project_pin(start: str | None, package: str = "deepspeed") -> Pin | None:
    """The project's pin of `package`: of the nearest folder's pins (project_pins), the strongest (locked, then
    constrained, then a bare name; the first file of pinfiles.READERS among equals)."""
    return strongest(project_pins(start, package))


def strongest(pins: list[Pin]) -> Pin | None:
    """Locked beats constrained beats a bare name; among equals the first (min keeps the first of equal rank)."""
    return min(pins, key=lambda pin: pin.rank) if pins else None


def project_pins(start: str | None, package: str) -> list[Pin]:
    """Every pin of `package` in the nearest folder holding one, from `start` up to the project root."""
    from ..boundary import folders_up_to_ceiling
    for folder in folders_up_to_ceiling(start):
        pins = pins_in(folder, package=package)
        if pins:
            return pins
    return []


def _resolve(pin: Pin) -> Choice:
    from . import specifiers  # on first use: most runs find the installed deepspeed and read no pin
    where = f"{pin.file}:{pin.line}"
    allowed = [release for release in SUPPORTED if specifiers.allows(pin.constraint, release)]
    if not allowed:
        # a pin below every replayed release (trlx's deepspeed==0.10.1) is closest to the oldest one: the newest
        # would report as removed what that release still accepts
        mentioned = [key(found) for found in re.findall(r"\d+\.\d+(?:\.\d+)?", pin.spec)]
        older = bool(mentioned) and max(mentioned) < key(OLDEST)
        closest = OLDEST if older else NEWEST
        reason = (f"{where} pins {pin.spec}, which allows no release dsconfig replays ({OLDEST} to {NEWEST}); "
                  f"{'oldest' if older else 'newest'} supported release")
        return Choice(closest, reason, "pin", pin.file, pin.line)
    if pin.rank == 0:
        reason = f"locked in {where} ({pin.spec})"
    elif len(allowed) == 1:
        reason = f"pinned in {where} ({pin.spec})"
    elif specifiers.is_url(pin.spec):  # a branch or commit of a repository, maybe a fork's: no release is known
        reason = f"pinned in {where} ({pin.spec}; a source of unknown release: the newest replayed)"
    else:
        reason = f"pinned in {where} ({pin.spec}; newest allowed)"
    return Choice(allowed[-1], reason, "pin", pin.file, pin.line)


