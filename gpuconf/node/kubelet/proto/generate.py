"""Regenerate api_pb2.py, api_pb2_grpc.py and api_pb2.pyi from api.proto with grpcio-tools.

Run from anywhere: ``python -m gpuconf.node.kubelet.proto.generate``. The proto is compiled with the
repository root as include path, so the generated gRPC module imports
``gpuconf.node.kubelet.proto.api_pb2`` rather than a top-level ``api_pb2``.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO = Path(__file__).with_name("api.proto")
REPOSITORY_ROOT = PROTO.parents[3]


def main() -> int:
    from grpc_tools import protoc

    relative = PROTO.relative_to(REPOSITORY_ROOT).as_posix()
    return protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={REPOSITORY_ROOT}",
            f"--python_out={REPOSITORY_ROOT}",
            f"--pyi_out={REPOSITORY_ROOT}",
            f"--grpc_python_out={REPOSITORY_ROOT}",
            relative,
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
