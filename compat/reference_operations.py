#!/usr/bin/env python3
"""Write the reference agent server's HTTP operations to
``compat/recorded/openapi_operations.json``.

Imports ``openhands.agent_server.api`` from the compat venv (the reference
1.58.2, installed by ``compat/setup.sh``), asks FastAPI for its OpenAPI
description and keeps what a client depends on: method, path, operation id
and the names of the path and query parameters. The Rust test
``crates/agent-server/tests/openapi_parity.rs`` checks that our server
documents every one of them.

Usage (from the repository root)::

    /var/cache/openhands-rs/compat-venv/bin/python compat/reference_operations.py
"""

from __future__ import annotations

import json
import os
import pathlib

METHODS = ("get", "post", "put", "patch", "delete")


def operations(doc: dict) -> list[dict]:
    ops = []
    for path, item in doc["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            params = shared + op.get("parameters", [])
            ops.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "operation_id": op.get("operationId"),
                    "path_params": sorted(p["name"] for p in params if p["in"] == "path"),
                    "query_params": sorted(p["name"] for p in params if p["in"] == "query"),
                }
            )
    ops.sort(key=lambda o: (o["path"], o["method"]))
    return ops


def main() -> None:
    os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
    from openhands.agent_server.api import api  # the reference, from the venv

    out = pathlib.Path(__file__).parent / "recorded" / "openapi_operations.json"
    out.write_text(json.dumps(operations(api.openapi()), indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
