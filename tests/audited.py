"""Run `dsconfig ARGS...` (or `--api EXPRESSION`, a call of the public API) under a Python audit hook that logs
every file the process opens, every folder it lists and every socket it touches, one per line, to $DSCONFIG_AUDIT_LOG.

tests/test_reading_boundary.py reads the log: whatever a command's code does, Python's own `open` event
(builtins.open, io.open, os.open) names every file it opened, so a command that opened a file some other
way than through dsconfig.boundary would show there.
"""

import os
import sys

_LOG = open(os.environ["DSCONFIG_AUDIT_LOG"], "w", buffering=1, encoding="utf-8", errors="backslashreplace")


def _hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        _LOG.write("open " + os.path.abspath(os.fsdecode(args[0])) + "\n")
    elif event in ("os.scandir", "os.listdir") and isinstance(args[0], (str, bytes)):  # a folder's names
        _LOG.write("open " + os.path.abspath(os.fsdecode(args[0])) + "\n")
    elif event.startswith("socket.") and event != "socket.__new__" or event == "socket.getaddrinfo":
        _LOG.write(f"network {event}\n")


sys.addaudithook(_hook)

if sys.argv[1:2] == ["--api"]:
    import dsconfig

    try:
        print(repr(eval(sys.argv[2], {"dsconfig": dsconfig})))
    except (OSError, ValueError, TypeError, RuntimeError) as error:  # the API's documented errors: one line
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(2)
else:
    sys.argv = ["dsconfig", *sys.argv[1:]]
    from dsconfig.cli import main

    main()
