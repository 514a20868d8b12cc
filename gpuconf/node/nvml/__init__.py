"""NVML behind an interface: a pynvml implementation and a fake driven by a YAML file."""
