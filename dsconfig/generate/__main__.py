"""`python -m dsconfig.generate ...` runs `dsconfig generate` on its own."""

from ..cli import run
from .command import generate

run(generate, "dsconfig generate")
