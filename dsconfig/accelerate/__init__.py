"""Accelerate config files (`accelerate config` writes them, `accelerate launch` reads them)."""

from .check import lint_accelerate

__all__ = ["lint_accelerate"]
