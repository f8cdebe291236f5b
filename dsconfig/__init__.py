"""dsconfig: lint and generate DeepSpeed and Hugging Face Accelerate training configs.

`dsconfig.check(...)` lints a config from Python (docs/api.md). It and its types come from
dsconfig.api on first use, so `import dsconfig` imports nothing else.
"""

__version__ = "0.1.0"

_API = ("check", "ConfigError", "Finding")
__all__ = list(_API)


def __getattr__(name):  # PEP 562: the engine is imported by the first check, not by `import dsconfig`
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'dsconfig' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API))
