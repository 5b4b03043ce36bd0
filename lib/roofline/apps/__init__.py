"""Apps on top of everything: the ``roofline`` CLI (``cli`` and its ``cli_<command>`` modules), the
``instructor`` app (Voilà) and the Jupyter server extension ``server_latency``.
"""

from __future__ import annotations
