"""Let an older DeepSpeed release import under today's torch and numpy.

DeepSpeed 0.14.0-0.14.3 import two private torch elastic-agent names torch 2.13 no longer has, and
releases up to 0.14.x import numpy.BUFSIZE (gone in numpy 2) in the autotuner's scheduler. None of
them is used to parse a config; giving them back lets those releases import. Stdlib + torch/numpy
only: used by scripts/build_releases.py and tests/release_worker.py inside the release's process.
"""

from __future__ import annotations

import logging


def restore_older_names() -> None:
    import numpy
    if not hasattr(numpy, "BUFSIZE"):
        numpy.BUFSIZE = 8192
    from torch.distributed.elastic.agent.server import api
    if not hasattr(api, "log"):
        api.log = logging.getLogger("torchelastic")
    if not hasattr(api, "_get_socket_with_port"):
        def _get_socket_with_port():
            raise RuntimeError("elastic training is not available in this process")
        api._get_socket_with_port = _get_socket_with_port
