#!/usr/bin/env bash
# Create (or reuse) the Python 3.12 virtualenv used by the compatibility harness.
#
# Idempotent: when the venv exists and was built from the current
# compat/requirements.txt, nothing is installed. Runs unattended (no prompts).
#
#   COMPAT_VENV   venv location (default /var/cache/openhands-rs/compat-venv)
#   COMPAT_PYTHON interpreter to build it with (default: pyenv 3.12.1, else python3.12)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${COMPAT_VENV:-/var/cache/openhands-rs/compat-venv}"
req="$here/requirements.txt"
marker="$venv/.compat-requirements.sha256"
start=$(date +%s)

elapsed() { echo "$(( $(date +%s) - start ))s"; }

pick_python() {
    if [[ -n "${COMPAT_PYTHON:-}" ]]; then echo "$COMPAT_PYTHON"; return; fi
    local pyenv_py=/root/.pyenv/versions/3.12.1/bin/python3.12
    if [[ -x "$pyenv_py" ]]; then echo "$pyenv_py"; return; fi
    if command -v python3.12 >/dev/null 2>&1; then command -v python3.12; return; fi
    echo "compat/setup.sh: no Python 3.12 found (set COMPAT_PYTHON)" >&2
    exit 1
}

# Keep imports offline and quiet.
export LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1 DO_NOT_TRACK=1
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

want_hash="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$marker" && "$(cat "$marker")" == "$want_hash" ]] \
    && "$venv/bin/python" - "$req" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if line:
        name, pin = line.split("==")
        if version(name) != pin:
            sys.exit(f"{name} {version(name)} != {pin}")
PY
    echo "compat venv up to date at $venv ($(elapsed))"
    exit 0
fi

python="$(pick_python)"
"$python" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' \
    || { echo "compat/setup.sh: $python is not Python 3.12" >&2; exit 1; }

if [[ ! -x "$venv/bin/python" ]]; then
    mkdir -p "$(dirname "$venv")"
    echo "creating venv at $venv with $python"
    "$python" -m venv "$venv"
fi

echo "installing $(grep -cv '^\s*\(#\|$\)' "$req") pinned packages ($(elapsed))"
"$venv/bin/python" -m pip install --quiet --requirement "$req"
"$venv/bin/python" -c 'import openhands.sdk, openhands.tools, openhands.agent_server, openai, pytest'
echo "$want_hash" > "$marker"
echo "compat venv ready at $venv ($(elapsed))"
