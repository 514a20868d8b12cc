import hashlib

import pytest

from gpuconf.formats.sha256 import sha256


@pytest.mark.parametrize(
    "data", [b"", b"abc", "gpuconf-node-pool-000\0é\0".encode(), bytes(range(256)) * 300]
)
def test_the_digest_is_hashlibs(data: bytes) -> None:
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    growing = sha256()
    for start in range(0, len(data), 97):
        growing.update(data[start : start + 97])
    assert growing.hexdigest() == hashlib.sha256(data).hexdigest()
