"""SHA-256 from CPython's own module: hashlib loads OpenSSL's libcrypto first (some 11 M
instructions, a sixth of a render's imports) for the few kilobytes gpuconf hashes. The digests
are the same; hashlib stands in where an interpreter lacks the module."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:  # an interpreter without CPython's module
        from hashlib import sha256

__all__ = ["sha256"]
