"""Reading a file a user names, safely: only a regular file, and only so many bytes of it.

A size limit read from ``stat`` is 0 for a device or a FIFO, and reading ``/dev/zero`` never ends while
opening a named pipe waits for a writer; every table, trace, config.json and result file is read here.
"""

from __future__ import annotations

import errno
import os
import stat
from importlib.resources.abc import Traversable


def read_regular_file(source: Traversable | str | os.PathLike, max_bytes: int) -> bytes:
    """The bytes of the regular file ``source``, at most ``max_bytes`` of them. A device, a FIFO or a
    socket (``/dev/zero``, a named pipe: no size to check, and a read that never ends or never starts)
    and a larger file raise ``OSError`` with a ``strerror`` that says so; a packaged resource that is
    not a path is read as it is.

    >>> read_regular_file("/dev/zero", 10)
    Traceback (most recent call last):
    ...
    OSError: [Errno 22] not a regular file (a device, a FIFO or a socket)
    """
    if not isinstance(source, str | os.PathLike):
        return source.read_bytes()
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once instead of waiting for a writer
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, a FIFO or a socket)")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes")
    return data
