"""The compiler: resolve → rules → validate → plan → render → emit, and explain."""
