#!/usr/bin/env bash
# Run the compatibility suites (compat/tests) against our binaries, or with
# --reference against the Python reference server (to check the tests themselves).
#
#   compat/run.sh [--reference] [pytest args...]
#
# Starts the scripted mock LLM and the agent-server on free ports with a
# private temp dir, waits for /ready, runs pytest, stops both, and exits with
# pytest's status.
#
#   CARGO_TARGET_DIR  where the debug binaries are (default <repo>/target)
#   COMPAT_VENV       Python venv (default /var/cache/openhands-rs/compat-venv; built by setup.sh)
#   COMPAT_SCRIPT     mock LLM script (default compat/scripts/compat.json)
#   COMPAT_MOCK=python  use compat/py_mock_llm.py instead of `openhands mock-llm` with our server
#   COMPAT_KEEP=1     keep the temp dir (logs, conversations) after the run
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
venv="${COMPAT_VENV:-/var/cache/openhands-rs/compat-venv}"
bin_dir="${CARGO_TARGET_DIR:-$repo/target}/debug"
script="${COMPAT_SCRIPT:-$here/scripts/compat.json}"
key="compat-key"

mode=ours
if [[ "${1:-}" == "--reference" ]]; then mode=reference; shift; fi

"$here/setup.sh"
py="$venv/bin/python"

tmp="$(mktemp -d /tmp/ohcompat-XXXXXX)"
mkdir -p "$tmp/conversations" "$tmp/project" "$tmp/bash_events" "$tmp/persistence" "$tmp/tmux"
mock_pid="" server_pid=""

cleanup() {
    local status=$?
    for pid in $server_pid $mock_pid; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in $server_pid $mock_pid; do
        wait "$pid" 2>/dev/null || true
    done
    # Terminal sessions may live in tmux servers under our private TMUX_TMPDIR.
    for sock in "$tmp"/tmux/tmux-*/* "$tmp"/run/tmux/tmux-*/*; do
        [[ -S "$sock" ]] && tmux -S "$sock" kill-server 2>/dev/null || true
    done
    if [[ "${COMPAT_KEEP:-0}" == "1" ]]; then
        echo "kept $tmp"
    else
        rm -rf "$tmp"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_http() { # url seconds name logfile pid
    local url="$1" secs="$2" name="$3" log="$4" pid="$5" i
    for ((i = 0; i < secs * 10; i++)); do
        if curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; then return 0; fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$name exited before answering $url; last log lines:" >&2
            tail -n 40 "$log" >&2 || true
            return 1
        fi
        sleep 0.1
    done
    echo "$name did not answer $url within ${secs}s; last log lines:" >&2
    tail -n 40 "$log" >&2 || true
    return 1
}

mock_port="$(free_port)"
server_port="$(free_port)"
server_url="http://127.0.0.1:$server_port"
mock_url="http://127.0.0.1:$mock_port"
start=$(date +%s)

if [[ "$mode" == reference ]]; then
    "$py" "$here/py_mock_llm.py" --script "$script" --port "$mock_port" >"$tmp/mock.log" 2>&1 &
    mock_pid=$!
    "$py" "$here/refserver.py" --run-dir "$tmp/run" --port "$server_port" >"$tmp/server-wrapper.log" 2>&1 &
    server_pid=$!
    server_log="$tmp/run/server.log"
    ready_secs=240
else
    need=(openhands-agent-server)
    [[ "${COMPAT_MOCK:-}" == python ]] || need+=(openhands)
    for b in "${need[@]}"; do
        [[ -x "$bin_dir/$b" ]] || { echo "missing $bin_dir/$b (cargo build -p openhands-cli -p openhands-agent-server)" >&2; exit 2; }
    done
    if [[ "${COMPAT_MOCK:-}" == python ]]; then
        "$py" "$here/py_mock_llm.py" --script "$script" --port "$mock_port" >"$tmp/mock.log" 2>&1 &
    else
        "$bin_dir/openhands" mock-llm --script "$script" --port "$mock_port" >"$tmp/mock.log" 2>&1 &
    fi
    mock_pid=$!
    (
        cd "$tmp"
        export OH_SESSION_API_KEYS_0="$key" OH_SECRET_KEY="compat-secret-key-0123456789"
        export OH_ENABLE_VSCODE=0 OH_PRELOAD_TOOLS=0 OH_ENABLE_BROWSER=0 OH_LEASE_TTL_SECONDS=0
        export OH_CONVERSATIONS_PATH="$tmp/conversations" OH_WORKSPACE_PATH="$tmp/project"
        export OH_BASH_EVENTS_DIR="$tmp/bash_events" OH_PERSISTENCE_DIR="$tmp/persistence"
        export OPENHANDS_AGENT_SERVER_CONFIG_PATH="$tmp/openhands_agent_server_config.json"
        export TMUX_TMPDIR="$tmp/tmux" DO_NOT_TRACK=1
        exec "$bin_dir/openhands-agent-server" --host 127.0.0.1 --port "$server_port"
    ) >"$tmp/server.log" 2>&1 &
    server_pid=$!
    server_log="$tmp/server.log"
    ready_secs=60
fi

wait_http "$mock_url/health" 30 "mock LLM" "$tmp/mock.log" "$mock_pid"
wait_http "$server_url/ready" "$ready_secs" "agent-server ($mode)" "$server_log" "$server_pid"
echo "compat: $mode server $server_url, mock $mock_url, ready after $(( $(date +%s) - start ))s"

export OH_COMPAT_SERVER="$server_url" OH_COMPAT_KEY="$key" OH_COMPAT_MOCK_URL="$mock_url"
# Tests that start (and restart) a server of their own use the same binary.
if [[ "$mode" == ours ]]; then export OH_COMPAT_SERVER_BIN="$bin_dir/openhands-agent-server"; fi
# The Runtime API suite (tests/test_runtime_api.py) starts a control plane of its own.
if [[ "$mode" == ours && -x "$bin_dir/openhands-control" ]]; then
    export OH_COMPAT_CONTROL_BIN="$bin_dir/openhands-control"
fi
export OPENHANDS_SUPPRESS_BANNER=1 LITELLM_LOCAL_MODEL_COST_MAP=True DO_NOT_TRACK=1
status=0
(cd "$here" && "$py" -m pytest "$@") || status=$?
if [[ $status -ne 0 ]]; then
    echo "---- last server log lines ($server_log) ----"
    tail -n 60 "$server_log" 2>/dev/null || true
fi
exit "$status"
