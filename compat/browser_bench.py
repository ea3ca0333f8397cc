"""Browser tools side by side: the reference's BrowserToolExecutor and ours
(crates/browser/examples/browser_bench.rs) on the same local page.

Measures the median of: browser start + first navigate (3 fresh browsers),
a navigate + get-content round trip and one list-tabs action (20 rounds on
a running browser). Run with the compat venv's python from the repository
root; pass the path of a built `browser_bench` example (release) as the
first argument to include our numbers.
"""

import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "false")
os.environ.setdefault("BROWSER_USE_CLOUD_SYNC", "false")

PAGE = """<!doctype html><html><head><title>Test home</title></head><body>
<main><h1>Welcome to the test site</h1>
<p>This page is served by the <strong>browser tests</strong>.</p>
<ul><li>first point</li><li>second point</li></ul>
<p><a href="/form">Open the greeting form</a></p>
</main></body></html>"""

STARTS = 3
ROUNDS = 20


def serve() -> str:
    root = tempfile.mkdtemp()
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write(PAGE)
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(  # noqa: E731
        *a, directory=root, **k
    )
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def reference(url: str) -> dict:
    from openhands.tools.browser_use.definition import (
        BrowserGetContentAction,
        BrowserListTabsAction,
        BrowserNavigateAction,
    )
    from openhands.tools.browser_use.impl import BrowserToolExecutor

    starts = []
    for _ in range(STARTS):
        t = time.perf_counter()
        ex = BrowserToolExecutor(headless=True)
        obs = ex(BrowserNavigateAction(url=url))
        starts.append((time.perf_counter() - t) * 1000)
        assert not obs.is_error, obs
        ex.close()
    ex = BrowserToolExecutor(headless=True)
    ex(BrowserNavigateAction(url=url))
    trips, actions = [], []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        ex(BrowserNavigateAction(url=url))
        obs = ex(BrowserGetContentAction())
        trips.append((time.perf_counter() - t) * 1000)
        assert "webpage_content" in obs.text, obs.text
        t = time.perf_counter()
        ex(BrowserListTabsAction())
        actions.append((time.perf_counter() - t) * 1000)
    ex.close()
    return {
        "impl": "reference",
        "start_and_first_navigate_ms": round(statistics.median(starts), 1),
        "navigate_get_content_ms": round(statistics.median(trips), 1),
        "list_tabs_ms": round(statistics.median(actions), 2),
    }


def main() -> None:
    url = serve()
    print(json.dumps(reference(url)))
    if len(sys.argv) > 1:
        out = subprocess.run([sys.argv[1], url], capture_output=True, text=True, timeout=600)
        print(out.stdout.strip() or out.stderr.strip())


if __name__ == "__main__":
    main()
