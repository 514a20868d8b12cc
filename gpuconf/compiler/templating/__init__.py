"""Templates (top-level templates/) shape the plan's values into files, in a sandbox; every
output is parsed back and checked before render hands it on."""
