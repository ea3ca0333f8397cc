#!/usr/bin/env bash
# The project's test command (README): formatting, lints, every Rust test,
# doc tests, and the Python compatibility suites against the real binaries.
# Installs what it needs (Python venv for the official clients) itself.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export RUST_BACKTRACE=1
# Terminal tests start real interactive shells that read ~/.bashrc. On
# machines whose rc runs `pyenv init`, a shell killed while pyenv rehashes
# leaves a lock that makes every later shell wait 60 s for it; bound that wait.
export PYENV_REHASH_TIMEOUT="${PYENV_REHASH_TIMEOUT:-2}"

# Each step says how long the previous one took; the total comes at the end.
SCRIPT_START=$(date +%s)
STEP_START=$SCRIPT_START
STEP_NAME=""
step_done() {
    local now
    now=$(date +%s)
    if [ -n "$STEP_NAME" ]; then printf '    [%ss] %s\n' "$((now - STEP_START))" "$STEP_NAME"; fi
    STEP_START=$now
}
step() { step_done; STEP_NAME="$*"; printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "no import circles between modules"
python3 scripts/module_cycles.py

step "typed errors: no new Result<_, String> in library code"
python3 scripts/string_errors.py

# Installing what the tests use (Debian packages, npm assets, the compat venv)
# is mostly waiting on downloads and disks, so it runs in the background while
# the workspace compiles; the tests start once both are done.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi; }
apt_install() {
    command -v apt-get >/dev/null || return 1
    DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -q "$@" >/dev/null 2>&1 \
        || { as_root apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null 2>&1 \
             && DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -q "$@" >/dev/null; }
}

step "linker (mold, when it can be had)"
# Linking dominates a test build's last minutes: ~20 test binaries, the
# binaries, benches and 46 examples, each linking the workspace. mold links
# them several times faster than the system linker; without it the build uses
# the default linker and is only slower.
command -v mold >/dev/null || apt_install mold || echo "warning: mold is not installed; linking with the default linker"
if command -v mold >/dev/null; then
    export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C link-arg=-fuse-ld=mold"
fi

SETUP_LOG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/openhands-test-setup-XXXXXX")"
install_services() {
    # crates/control starts its own PostgreSQL (initdb + postgres on a temp dir
    # and port) from Debian's package, and runs docker sandboxes when a docker
    # daemon answers; without them those tests say so loudly and skip.
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        apt_install postgresql || echo "warning: PostgreSQL is not installed; the control plane's PostgreSQL tests will skip"
    fi
    command -v dockerd >/dev/null || apt_install docker.io || echo "warning: docker.io could not be installed"
    # The sandbox tests run the agent's processes under bubblewrap (Debian's
    # bubblewrap package); they are not skipped, so it must be there.
    command -v bwrap >/dev/null || apt_install bubblewrap || { echo "error: bubblewrap (bwrap) is needed by the sandbox tests" >&2; return 1; }
    # The SSH relay tests use Debian's OpenSSH client and sshpass; the relay serves SFTP with sftp-server.
    command -v sshpass >/dev/null && [ -x /usr/lib/openssh/sftp-server ] || apt_install openssh-client sshpass openssh-sftp-server || echo "warning: OpenSSH client tools are missing; the SSH relay tests will skip"
    # The browser tools drive Debian's chromium over the DevTools protocol; their
    # tests skip (saying so) only where no chromium can be had.
    command -v chromium >/dev/null || apt_install chromium || echo "warning: chromium is not installed; the browser tool tests will skip"
}
# The MCP tests run the reference MCP server over stdio and streamable HTTP,
# and a Python one over SSE; the browser recording tests serve rrweb to the
# page themselves (there is no CDN here). Without them they say so and skip.
MCP_SERVERS_DIR="${OPENHANDS_MCP_SERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/openhands-rs/mcp-servers}"
MCP_EVERYTHING="$MCP_SERVERS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
RRWEB_DIR="${OPENHANDS_RRWEB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/openhands-rs/rrweb}"
RRWEB_FILE="$RRWEB_DIR/node_modules/rrweb/dist/rrweb.umd.cjs"
# The book (docs/) is built with mdBook, which no Debian, npm or PyPI package
# ships prebuilt: cargo installs a pinned version once into a cached root.
MDBOOK_VERSION=0.4.52
MDBOOK_ROOT="${OPENHANDS_MDBOOK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/openhands-rs/mdbook}"
MDBOOK="$(command -v mdbook || echo "$MDBOOK_ROOT/bin/mdbook")"
install_assets() {
    # Two apt jobs may run at once (this one and install_services): apt_install waits for the lock.
    command -v npm >/dev/null || apt_install nodejs npm || true
    if [ ! -f "$MCP_EVERYTHING" ] && command -v npm >/dev/null; then
        mkdir -p "$MCP_SERVERS_DIR"
        timeout 600 npm install --no-audit --no-fund --prefix "$MCP_SERVERS_DIR" \
            @modelcontextprotocol/server-everything@2026.8.31 >/dev/null \
            || echo "warning: npm could not install server-everything; the MCP tests will skip"
    fi
    if [ ! -f "$RRWEB_FILE" ] && command -v npm >/dev/null; then
        mkdir -p "$RRWEB_DIR"
        timeout 600 npm install --no-audit --no-fund --prefix "$RRWEB_DIR" rrweb@2.0.0-alpha.17 >/dev/null \
            || echo "warning: npm could not install rrweb; the browser recording tests will skip"
    fi
    command -v npm >/dev/null || echo "warning: npm is not installed; the MCP and browser recording tests will skip"
    if [ ! -x "$MDBOOK" ]; then
        # Its own temporary build directory (never the workspace's, whose lock the build holds).
        env -u CARGO_TARGET_DIR -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS \
            cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --root "$MDBOOK_ROOT" >/dev/null 2>&1 \
            || echo "warning: cargo could not install mdbook $MDBOOK_VERSION; the book step will fail"
    fi
    # The SSE test server is built with the `mcp` package from PyPI, which the
    # compat venv (the reference SDK's dependencies) has.
    if [ -x compat/setup.sh ] && [ "${SKIP_COMPAT:-0}" != "1" ]; then
        bash compat/setup.sh || echo "warning: the compat venv could not be built; the MCP SSE test will skip"
        bash compat/control_fuzz.sh --setup-only || echo "warning: schemathesis could not be installed"
    fi
}
install_services >"$SETUP_LOG_DIR/services.log" 2>&1 &
SERVICES_PID=$!
install_assets >"$SETUP_LOG_DIR/assets.log" 2>&1 &
ASSETS_PID=$!

step "build every target with clippy's lints (warnings are errors)"
# One compilation does both: clippy-driver, as cargo's wrapper for the
# workspace's own crates, lints each crate and then compiles it, so the lint
# pass and the test build share every artefact instead of checking the whole
# workspace a second time (this is what `cargo clippy` does under the hood,
# minus its check-only mode). Dependencies are compiled by plain rustc.
CLIPPY_DRIVER="$(rustc --print sysroot)/bin/clippy-driver"
if [ -x "$CLIPPY_DRIVER" ]; then
    export RUSTC_WORKSPACE_WRAPPER="$CLIPPY_DRIVER"
    export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
    cargo build --workspace --all-targets
else
    cargo clippy --workspace --all-targets -- -D warnings
    cargo build --workspace --all-targets
fi

step "waiting for the background set-up (Debian packages, npm assets, compat venv)"
wait "$SERVICES_PID" || { cat "$SETUP_LOG_DIR/services.log"; exit 1; }
wait "$ASSETS_PID" || true
cat "$SETUP_LOG_DIR/services.log" "$SETUP_LOG_DIR/assets.log"
DOCKERD_PID=""
if ! docker info >/dev/null 2>&1; then
    if command -v dockerd >/dev/null && [ "$(id -u)" = 0 ]; then
        setsid dockerd >"${TMPDIR:-/tmp}/openhands-test-dockerd.log" 2>&1 </dev/null &
        DOCKERD_PID=$!
        for _ in $(seq 1 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
    fi
    docker info >/dev/null 2>&1 || echo "warning: no docker daemon; the control plane's docker sandbox test will skip"
fi
stop_dockerd() { if [ -n "$DOCKERD_PID" ]; then kill "$DOCKERD_PID" 2>/dev/null || true; fi; }
trap stop_dockerd EXIT

if [ -f "$MCP_EVERYTHING" ]; then export OPENHANDS_TEST_MCP_EVERYTHING="$MCP_EVERYTHING"; fi
if [ -f "$RRWEB_FILE" ]; then export OPENHANDS_TEST_RRWEB="$RRWEB_FILE"; fi
MCP_PYTHON="${COMPAT_VENV:-/var/cache/openhands-rs/compat-venv}/bin/python"
if [ -x "$MCP_PYTHON" ] && "$MCP_PYTHON" -c 'import mcp.server.fastmcp' 2>/dev/null; then
    export OPENHANDS_TEST_MCP_PYTHON="$MCP_PYTHON"
else
    echo "warning: no Python with the mcp package; the MCP SSE test will skip"
fi
if [ -x "$MCP_PYTHON" ] && "$MCP_PYTHON" -c 'import openhands.agent_server' 2>/dev/null; then
    export OPENHANDS_TEST_REFERENCE_PYTHON="$MCP_PYTHON"
else
    echo "warning: no reference agent server; the RemoteConversation compat test will skip"
fi

# Background jobs: each runs with its output in a file and reports its exit
# status and seconds; their outputs follow, in a fixed order, once all are done.
JOBS_DIR="$(mktemp -d "${TMPDIR:-/tmp}/openhands-test-jobs-XXXXXX")"
JOB_NAMES=()
JOB_PIDS=()
start_job() { # name command...
    local name="$1"
    shift
    (
        started=$(date +%s)
        status=0
        "$@" || status=$?
        echo "$status $(( $(date +%s) - started ))" >"$JOBS_DIR/$name.status"
        exit "$status"
    ) >"$JOBS_DIR/$name.log" 2>&1 &
    JOB_NAMES+=("$name")
    JOB_PIDS+=("$!")
}

docs_job() {
    # Runs inside `start_job`'s `||`, where `set -e` does not apply: each
    # command's failure returns on its own.
    # Doc tests: the guide's Rust snippets (the facade's `book` module
    # includes every chapter) compile and the runnable ones run.
    cargo test --workspace --doc || return
    # The book builds (docs/, mdBook) and its links resolve.
    [ -x "$MDBOOK" ] || { echo "error: mdbook is not installed ($MDBOOK)" >&2; return 1; }
    local out
    out="$(mktemp -d "${TMPDIR:-/tmp}/openhands-book-XXXXXX")" || return
    "$MDBOOK" build docs --dest-dir "$out" || return
    rm -rf "$out"
    python3 scripts/check_book_links.py || return
    # The facade's API docs build without warnings. The build step linted
    # every crate; rustdoc needs only metadata, so the workspace crates are
    # checked here by plain rustc (clippy again costs ~15%).
    env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS RUSTDOCFLAGS="-D warnings" \
        cargo doc -p openhands --no-deps --all-features
}

step "tests: nextest in front; doc tests, the book, the facade's docs and the Python suites alongside"
# The Rust tests mostly wait on the servers, shells and containers they
# drive (measured: the agent server's and the SDK's integration tests use
# 12-15% of a core while they run), so the documentation checks, which
# compile, and the Python compatibility jobs, which also mostly wait on
# servers, run at the same time instead of after them. Each job starts its
# own servers on free ports in its own temporary directory. The doc jobs'
# cargo calls wait for nextest's own build check to release the target
# directory's lock.
start_job "docs" docs_job
if [ "${SKIP_COMPAT:-0}" != "1" ] && [ -x compat/run.sh ]; then
    bash compat/setup.sh
    COMPAT_PY="${COMPAT_VENV:-/var/cache/openhands-rs/compat-venv}/bin/python"
    export OPENHANDS_SUPPRESS_BANNER=1 LITELLM_LOCAL_MODEL_COST_MAP=True
    # The reference client against our server.
    start_job "compat suites" bash compat/run.sh
    # A conversation our server wrote resumes in the reference server.
    start_job "cross resume" "$COMPAT_PY" compat/cross_resume.py
    # The same requests to both servers; answers compared (archives, workspace site).
    start_job "side by side" "$COMPAT_PY" compat/side_by_side.py
    # The reference's analyzer verdicts our table test compares against are current.
    start_job "security table" "$COMPAT_PY" compat/security_table.py --check
    # schemathesis from the control plane's OpenAPI document, two tenants,
    # time-bounded (20 s per phase), on the build step's binaries.
    if [ -x compat/control_fuzz.sh ]; then
        start_job "control fuzz" env CONTROL_FUZZ_SECONDS="${CONTROL_FUZZ_SECONDS:-20}" bash compat/control_fuzz.sh
    fi
fi

NEXTEST_STATUS=0
NEXTEST_STARTED=$(date +%s)
if cargo nextest --version >/dev/null 2>&1; then
    # The `ci` profile (.config/nextest.toml) runs the tests that mostly
    # wait two per core.
    cargo nextest run --workspace --profile ci --test-threads "$(( $(nproc) * 2 ))" || NEXTEST_STATUS=$?
else
    cargo test --workspace --no-fail-fast || NEXTEST_STATUS=$?
fi
printf '\n--- nextest (exit %s, %ss) ---\n' "$NEXTEST_STATUS" "$(( $(date +%s) - NEXTEST_STARTED ))"

JOBS_FAILED=()
[ "$NEXTEST_STATUS" = 0 ] || JOBS_FAILED+=("nextest")
for i in "${!JOB_NAMES[@]}"; do
    wait "${JOB_PIDS[$i]}" || JOBS_FAILED+=("${JOB_NAMES[$i]}")
done
for name in "${JOB_NAMES[@]}"; do
    read -r job_status job_secs <"$JOBS_DIR/$name.status" || { job_status="?"; job_secs="?"; }
    printf '\n--- %s (exit %s, %ss) ---\n' "$name" "$job_status" "$job_secs"
    cat "$JOBS_DIR/$name.log"
done
rm -rf "$JOBS_DIR"
if [ "${#JOBS_FAILED[@]}" -gt 0 ]; then
    printf '\nfailed: %s\n' "${JOBS_FAILED[*]}" >&2
    exit 1
fi

step_done
printf '\n==> all steps passed in %ss\n' "$(( $(date +%s) - SCRIPT_START ))"
