"""The live-cluster view: read a cluster through the Kubernetes client and compare it with its file."""
