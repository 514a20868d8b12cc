"""Names another program bounds (a unix socket path, a Grafana uid), cut short where long."""

from __future__ import annotations

from gpuconf.formats.sha256 import sha256

DIGEST_CHARACTERS = 12


def shortened(text: str, limit: int) -> str:
    """`text` itself where it fits `limit` characters; else its start and a digest of all of
    it, `limit` long, so two long texts that begin alike stay apart."""
    if len(text) <= limit:
        return text
    digest = sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARACTERS]
    return f"{text[: limit - DIGEST_CHARACTERS - 1]}-{digest}"
