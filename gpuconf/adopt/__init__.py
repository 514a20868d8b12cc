"""Meeting users where their config is: round-trip edits of cluster files (fmt, migrate, nodes),
importers from NVIDIA's chart, the GPU Operator, ResourceQuotas and a live cluster, and the
live-cluster view (status). Sits above the compiler, whose validator checks every file written."""
