"""The kubelet device plugin API v1beta1: the proto and the modules grpcio-tools generates from it."""
