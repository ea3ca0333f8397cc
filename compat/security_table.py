"""Runs the reference's security analyzers (openhands-sdk 1.58.2) on the
command table our analyzers are tested on, and writes their verdicts.

    $VENV/bin/python compat/security_table.py            # rewrite the file
    $VENV/bin/python compat/security_table.py --check    # fail if it changed

Table:   crates/sdk/tests/data/security_commands.json
Output:  crates/sdk/tests/data/security_reference_verdicts.json
The Rust test `security_reference` compares our verdicts with these: never
stricter on ordinary commands, never more lenient on dangerous ones.
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


def main() -> int:
    table = json.loads(TABLE.read_text())
    analyzers = {
        "PatternSecurityAnalyzer": PatternSecurityAnalyzer(),
        "PolicyRailSecurityAnalyzer": PolicyRailSecurityAnalyzer(),
        "EnsembleSecurityAnalyzer": EnsembleSecurityAnalyzer(
            analyzers=[PolicyRailSecurityAnalyzer(), PatternSecurityAnalyzer()]
        ),
    }
    out = {}
    for group in ("ordinary", "dangerous"):
        out[group] = {}
        for command in table[group]:
            out[group][command] = {
                name: a.security_risk(action(command)).value for name, a in analyzers.items()
            }
    text = json.dumps(out, indent=2, ensure_ascii=False) + "\n"
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date; run compat/security_table.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
