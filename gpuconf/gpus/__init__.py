"""NVIDIA facts: the GPU catalog, MIG profiles, resource-name rules."""
