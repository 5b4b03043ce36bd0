"""Send each widget message at once: switch off Nagle's algorithm on Jupyter's kernel websocket.

With Nagle's algorithm a small message (a slider's new value) can wait for the previous packet's delayed
ACK, about 40 ms on Linux loopback: most of the explorers' slider latency (benchmarks/browser_latency.py).
JupyterLab loads this module as a server extension (jupyter-config/), and ``roofline.apps.instructor``
calls ``enable_tcp_nodelay()`` before starting Voilà.

>>> enable_tcp_nodelay()
True
>>> enable_tcp_nodelay()   # idempotent
True
"""

from __future__ import annotations


def enable_tcp_nodelay() -> bool:
    """Patch the kernel websocket handler so every connection sets TCP_NODELAY on open; True if done."""
    try:
        from jupyter_server.services.kernels.websocket import KernelWebsocketHandler
    except ImportError:  # an older jupyter_server: leave it as it is
        return False
    if getattr(KernelWebsocketHandler, "_nodelay_patched", False):
        return True
    original_open = KernelWebsocketHandler.open

    async def open_without_nagle(self, *args, **kwargs):
        self.set_nodelay(True)
        return await original_open(self, *args, **kwargs)

    KernelWebsocketHandler.open = open_without_nagle
    KernelWebsocketHandler._nodelay_patched = True
    return True


def _jupyter_server_extension_points():
    """Registers this module as a Jupyter server extension (enabled by the package's config file)."""
    return [{"module": "roofline.apps.server_latency"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Called by JupyterLab's server at start-up."""
    if enable_tcp_nodelay():
        serverapp.log.info("roofline: TCP_NODELAY on kernel websockets (slider messages go out at once)")
