"""Drive the reference OpenHandsCloudWorkspace against a Cloud API (our
stand-in in tests): start a sandbox, run a command, read the account's LLM
and secrets, delete the sandbox. Prints what it got as JSON.

Usage: python cloud_workspace_client.py CLOUD_URL CLOUD_KEY WORKING_DIR
"""

import json
import sys

from openhands.workspace import OpenHandsCloudWorkspace


def main() -> None:
    url, key, workdir = sys.argv[1:4]
    ws = OpenHandsCloudWorkspace(
        cloud_api_url=url,
        cloud_api_key=key,
        sandbox_spec_id="spec-1",
        working_dir=workdir,
    )
    result = ws.execute_command("echo from-reference")
    llm = ws.get_llm()
    secrets = ws.get_secrets()
    out = {
        "stdout": result.stdout.strip(),
        "model": llm.model,
        "secrets": {name: {"url": s.url} for name, s in secrets.items()},
    }
    ws.cleanup()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
