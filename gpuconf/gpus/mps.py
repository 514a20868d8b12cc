"""NVIDIA's MPS limits: how many clients one GPU's control daemon accepts."""

from __future__ import annotations

VOLTA_MPS_CAPABILITY = (7, 5)
"""NVIDIA's mps-control-daemon allows 48 clients from compute capability 7.5, 16 below."""
MAX_CLIENTS_FROM_7_5 = 48
MAX_CLIENTS_BELOW_7_5 = 16


def capability(text: str) -> tuple[int, int]:
    """ "8.6" -> (8, 6)."""
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def max_mps_clients(compute_capability: str) -> int:
    if capability(compute_capability) >= VOLTA_MPS_CAPABILITY:
        return MAX_CLIENTS_FROM_7_5
    return MAX_CLIENTS_BELOW_7_5
