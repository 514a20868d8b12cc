"""What a cluster file declares, resolved: the declared inventory and each class's GPUs."""
