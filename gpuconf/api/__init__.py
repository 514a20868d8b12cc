"""The versioned files both halves read: cluster models, the node config, host runtime file shapes, the schema."""
