"""Regenerate the Python modules of api.proto (device plugins) and podresources.proto with
grpcio-tools: <name>_pb2.py, <name>_pb2_grpc.py and <name>_pb2.pyi.

Run from anywhere: ``python -m gpuconf.node.kubelet.proto.generate``. The proto is compiled with the
repository root as include path, so the generated gRPC module imports
``gpuconf.node.kubelet.proto.api_pb2`` rather than a top-level ``api_pb2``.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTOS = [Path(__file__).with_name(name) for name in ("api.proto", "podresources.proto")]
REPOSITORY_ROOT = PROTOS[0].parents[4]


def main() -> int:
    from grpc_tools import protoc

    relative = [proto.relative_to(REPOSITORY_ROOT).as_posix() for proto in PROTOS]
    return protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={REPOSITORY_ROOT}",
            f"--python_out={REPOSITORY_ROOT}",
            f"--pyi_out={REPOSITORY_ROOT}",
            f"--grpc_python_out={REPOSITORY_ROOT}",
            *relative,
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
