"""Text to plain data and back; knows no cluster: located YAML, YAML and TOML writers, package data."""
