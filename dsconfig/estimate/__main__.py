"""`python -m dsconfig.estimate ...` runs `dsconfig estimate` on its own."""

from ..cli import run
from .command import estimate

run(estimate, "dsconfig estimate")
