"""`python -m dsconfig.generate ...` runs `dsconfig generate` on its own."""

from .command import generate

generate(prog_name="dsconfig generate")
