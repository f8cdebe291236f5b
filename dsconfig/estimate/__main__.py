"""`python -m dsconfig.estimate ...` runs `dsconfig estimate` on its own."""

from .command import estimate

estimate(prog_name="dsconfig estimate")
