"""The kubelet device-plugin API: registration, the gRPC server, allocation."""
