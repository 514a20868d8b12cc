"""Kueue: the queues built from a cluster's classes and quotas, and the release they are checked against."""
