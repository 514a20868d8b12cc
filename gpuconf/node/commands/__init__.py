"""The node's commands: run, check, apply-runtime."""
