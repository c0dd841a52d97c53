"""File digests: a file's SHA-256, read once per version of the file in a process."""

from __future__ import annotations

import hashlib
import os
import threading

#: SHA-256 of files already read, by the file's identity and version (`file_sha256`).
_SHA_MEMO: dict[tuple[str, int, int, int, int, int], str] = {}
_SHA_LOCK = threading.Lock()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's content, remembered by (path, device, inode, size, mtime, ctime):
    ``cp -p`` restores mtime, but nobody can set ctime back.

    Example:
        >>> import hashlib, pathlib
        >>> file_sha256(__file__) == hashlib.sha256(pathlib.Path(__file__).read_bytes()).hexdigest()
        True
    """
    real = os.path.realpath(path)
    st = os.stat(real)
    key = (real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    digest = _SHA_MEMO.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(real, "rb") as fh:  # hashlib.file_digest is 3.11+; we support 3.10
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
        with _SHA_LOCK:
            # One entry per path: an older version's digest is of no further use.
            for old in [k for k in _SHA_MEMO if k[0] == real]:
                del _SHA_MEMO[old]
            _SHA_MEMO[key] = digest
    return digest
