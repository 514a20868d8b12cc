"""Container-runtime host files: reading, merging and writing them safely."""
