#!/usr/bin/env bash
# Fuzzes the task-control plane's API from its own OpenAPI document with
# schemathesis (PyPI; its own venv, pinned), time-bounded, against a control
# plane with two tenants (local sandboxes, SQLite, no LLM needed):
#
#   1. tenant B's credential on A's tenant and sandbox ids: no 5xx, and
#      every answer is a refusal (401/403/404; 400 for a malformed request)
#      that names none of A's ids (compat/control_fuzz/hooks.py);
#   2. tenant A's credential on A's tenant and sandbox: no 5xx, answers
#      conform to the document (status codes, content types, schemas).
#
#   CONTROL_FUZZ_VENV     venv (default /var/cache/openhands-rs/schemathesis-venv)
#   CONTROL_FUZZ_SECONDS  time budget of each run (default 60)
#   CONTROL_FUZZ_EXAMPLES examples per operation (default 8)
#   CARGO_TARGET_DIR      where the debug binaries are (default ./target)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
venv="${CONTROL_FUZZ_VENV:-/var/cache/openhands-rs/schemathesis-venv}"
pin="schemathesis==4.32.5"
seconds="${CONTROL_FUZZ_SECONDS:-60}"
examples="${CONTROL_FUZZ_EXAMPLES:-8}"
bin_dir="${CARGO_TARGET_DIR:-$root/target}/debug"
control="$bin_dir/openhands-control"
if ! "$venv/bin/st" --version 2>/dev/null | grep -q "${pin#*==}"; then
    # The first interpreter that runs: a pyenv shim for a version that is not
    # selected is found by `command -v` and then fails.
    python="${CONTROL_FUZZ_PYTHON:-}"
    if [[ -z "$python" ]]; then
        for p in /root/.pyenv/versions/3.12.1/bin/python3.12 "$(command -v python3.12 || true)" "$(command -v python3 || true)"; do
            if [[ -n "$p" ]] && "$p" -c pass 2>/dev/null; then python="$p"; break; fi
        done
    fi
    [[ -n "$python" ]] || { echo "control_fuzz: no Python 3 runs here (set CONTROL_FUZZ_PYTHON)" >&2; exit 1; }
    "$python" -m venv "$venv"
    timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check "$pin"
fi

# `--setup-only`: install schemathesis and stop (the test command does this
# in the background while the workspace compiles).
if [[ "${1:-}" == "--setup-only" ]]; then exit 0; fi
[[ -x "$control" ]] || { echo "control_fuzz: build first: cargo build -p openhands-control -p openhands-agent-server" >&2; exit 1; }

work="$(mktemp -d)"
pid=""
cleanup() {
    if [[ -n "$pid" ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

export OH_CONTROL_AGENT_SERVER_BIN="$bin_dir/openhands-agent-server"
export OH_CONTROL_SECRET_KEY="ZnV6ei1rZXktZm9yLXRoZS1jb250cm9sLXBsYW5lMDA="
export OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN=1 OH_CONTROL_HOST_TIMEOUT_SECONDS=3
# The SSH relay on (its tickets route answers 503 while it is off).
export OH_CONTROL_SSH_ADDR=127.0.0.1:0
# Output responses end (for a reconnect) within the request timeout.
export OH_CONTROL_OUTPUT_ROTATION_SECONDS=2
# No model is reached: a task fails at its first model call.
export LLM_MODEL=openai/none LLM_API_KEY=none LLM_BASE_URL=http://127.0.0.1:9/v1
data=(--data-dir "$work/data")

"$control" serve --host 127.0.0.1 --port 0 "${data[@]}" >"$work/url" 2>"$work/control.log" &
pid=$!
url=""
for _ in $(seq 1 300); do
    url="$(sed -n 's/^OPENHANDS_CONTROL_URL=//p' "$work/url" 2>/dev/null || true)"
    [[ -n "$url" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
done
[[ -n "$url" ]] || { cat "$work/control.log" >&2; echo "control_fuzz: the control plane did not start" >&2; exit 1; }

admin() { "$control" "$@" "${data[@]}"; }
full="sandboxes:write,sandboxes:read,ai_chat:use"
tenant() {
    local id user key
    id="$(admin tenant create "$1")"
    user="$(admin user create --tenant "$id" alice --permissions "$full")"
    key="$(admin key create --tenant "$id" --user alice --grants "$full")"
    echo "$id $key"
}
read -r a_id a_key < <(tenant acme)
read -r b_id b_key < <(tenant globex)
sandbox="$(curl -fsS -X POST -H "Authorization: Bearer $a_key" -H 'Content-Type: application/json' \
    -d '{"name":"owned-by-acme"}' "$url/v1/customer/tenants/$a_id/sandboxes" \
    | sed -n 's/.*"id":"\([0-9a-f-]\{36\}\)".*/\1/p' | head -1)"
[[ -n "$sandbox" ]] || { cat "$work/control.log" >&2; echo "control_fuzz: no sandbox" >&2; exit 1; }

cat >"$work/schemathesis.toml" <<TOML
[parameters]
"path.tenant_id" = "$a_id"
"path.sandbox_id" = "$sandbox"
TOML

run() {
    local name="$1" key="$2" checks="$3"
    shift 3
    echo "==> schemathesis: $name"
    # From the scratch directory: schemathesis keeps its cache in the working directory.
    (cd "$work" && SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$here/control_fuzz" PYTHONDONTWRITEBYTECODE=1 \
        timeout $((seconds + 120)) "$venv/bin/st" --config-file "$work/schemathesis.toml" \
        run "$url/openapi.json" -H "Authorization: Bearer $key" \
        --checks "$checks" --max-examples "$examples" --max-time "$seconds" \
        --phases examples,coverage,fuzzing --workers 1 --no-color \
        --request-timeout 30 --seed 20261204 "$@")
}
status=0
# B first: A's own run may delete A's sandbox.
CONTROL_FUZZ_FOREIGN=1 CONTROL_FUZZ_SECRETS="$sandbox,owned-by-acme" CONTROL_FUZZ_CALLER_TENANT="$b_id" \
    run "tenant B's credential on tenant A's ids" "$b_key" not_a_server_error,other_tenants_see_nothing \
    || status=1
# A's sandbox stays: the other routes then reach their own checks.
run "tenant A's own credential" "$a_key" \
    not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --exclude-operation-id delete_sandbox || status=1
if grep -q "panicked" "$work/control.log"; then
    grep -n "panicked" "$work/control.log" >&2
    status=1
fi
exit "$status"
