"""The one spelling of the API version that cluster files and node configs carry."""

from __future__ import annotations

from typing import Final, Literal

ApiVersion = Literal["gpuconf.dev/v1alpha1"]
API_VERSION: Final[ApiVersion] = "gpuconf.dev/v1alpha1"
"""mypy checks that this value is the one the Literal allows."""
