"""Generated core schemas: see `api/freeze_schema.py`."""
