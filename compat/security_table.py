"""Runs the reference's security analyzers (openhands-sdk 1.58.2) on the
command table our analyzers are tested on, and writes their verdicts.

    $VENV/bin/python compat/security_table.py            # rewrite the file
    $VENV/bin/python compat/security_table.py --check    # fail if it changed

Table:   crates/sdk/tests/data/security_commands.json
Output:  crates/sdk/tests/data/security_reference_verdicts.json
Corpus:  crates/sdk/tests/data/security_corpus.json (40 commands; the
         `reference` verdicts of each entry are rewritten, `ours` is kept)
The Rust tests compare our verdicts with these: never stricter on ordinary
commands, never more lenient on dangerous ones.
"""

import json
import sys
from pathlib import Path

from openhands.sdk.event import ActionEvent
from openhands.sdk.llm import MessageToolCall, TextContent
from openhands.sdk.security import (
    EnsembleSecurityAnalyzer,
    PatternSecurityAnalyzer,
    PolicyRailSecurityAnalyzer,
)
from openhands.sdk.security.risk import SecurityRisk
from openhands.tools.terminal import TerminalAction

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "crates/sdk/tests/data/security_commands.json"
OUT = ROOT / "crates/sdk/tests/data/security_reference_verdicts.json"
CORPUS = ROOT / "crates/sdk/tests/data/security_corpus.json"


def action(command: str) -> ActionEvent:
    args = json.dumps({"command": command})
    return ActionEvent(
        thought=[TextContent(text="")],
        action=TerminalAction(command=command),
        tool_name="terminal",
        tool_call_id="call_1",
        tool_call=MessageToolCall(id="call_1", name="terminal", arguments=args, origin="completion"),
        llm_response_id="resp_1",
        security_risk=SecurityRisk.LOW,
        summary="run a command",
    )


def analyzers() -> dict:
    return {
        "PatternSecurityAnalyzer": PatternSecurityAnalyzer(),
        "PolicyRailSecurityAnalyzer": PolicyRailSecurityAnalyzer(),
        "EnsembleSecurityAnalyzer": EnsembleSecurityAnalyzer(
            analyzers=[PolicyRailSecurityAnalyzer(), PatternSecurityAnalyzer()]
        ),
    }


def verdicts(command: str) -> dict:
    return {name: a.security_risk(action(command)).value for name, a in analyzers().items()}


def table_text() -> str:
    table = json.loads(TABLE.read_text())
    out = {}
    for group in ("ordinary", "dangerous"):
        out[group] = {command: verdicts(command) for command in table[group]}
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def corpus_text() -> str:
    corpus = json.loads(CORPUS.read_text())
    for entry in corpus["commands"]:
        ours = entry.pop("ours", None)
        entry["reference"] = verdicts(entry["command"])
        if ours is not None:
            entry["ours"] = ours
    return json.dumps(corpus, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    stale = []
    for path, text in ((OUT, table_text()), (CORPUS, corpus_text())):
        if "--check" in sys.argv:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
            continue
        path.write_text(text)
        print(f"wrote {path}")
    for path in stale:
        print(f"{path} is out of date; run compat/security_table.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
