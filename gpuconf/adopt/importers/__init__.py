"""Importers: cluster files written from what a team runs today (NVIDIA's device-plugin chart,
the GPU Operator's ClusterPolicy, ResourceQuotas, a live cluster). What gpuconf cannot express
is listed as a located warning, never dropped silently."""
