"""`gpuconf node`: the device-plugin runtime that runs on every GPU node.

Only this package imports grpclib, pynvml and the kubernetes client.
"""
