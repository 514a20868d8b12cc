"""`gpuconf node`: the device-plugin runtime that runs on every GPU node.

Only this package imports grpclib and pynvml; of it, only driver_upgrade (driver-drain,
driver-uncordon) imports the kubernetes client: the runtime's Node writes go through
own_node_client.
"""
