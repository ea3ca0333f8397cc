"""Runs one workflow script for the Rust `workflow` tool.

Protocol (JSON, one object per line): the host writes the job first,
`{"script": str, "max_concurrency": int}`; this process asks for sub-agent
runs on its standard output, `{"id": n, "op": "run_agent", "prompt": str,
"subagent_type": str, "description": str | null}`, and the host answers each
on standard input, `{"id": n, "ok": bool, "result": str, "error": str}`.
The last line written is `{"op": "done", "ok": bool, "text": str}`.
`print()` in a script goes to standard error (the server log).
"""

import ast
import asyncio
import inspect
import json
import sys
import threading

MAX_SCRIPT_CHARS = 20_000
MAX_REDUCE_INPUT_CHARS = 12_000
CUT_NOTE = "\n... [truncated workflow intermediate results]"
TIMEOUT_SECONDS = 3600.0
BANNED_CALLS = frozenset(
    "breakpoint compile delattr dir eval exec getattr globals input locals open "
    "setattr vars __import__".split()
)
BANNED_ROOTS = frozenset({"os", "subprocess"})

PROTOCOL = sys.stdout
sys.stdout = sys.stderr


class ScriptError(ValueError):
    """The script breaks a rule."""


def root_name(node):
    value = node.value
    while isinstance(value, ast.Attribute):
        value = value.value
    return value.id if isinstance(value, ast.Name) else None


def check_script(source):
    if len(source) > MAX_SCRIPT_CHARS:
        raise ScriptError(
            f"Workflow script is too large: {len(source)} > {MAX_SCRIPT_CHARS}"
        )
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise ScriptError(f"Workflow script has invalid syntax: {err}") from err
    mains = [
        n for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "main"
    ]
    if len(mains) != 1:
        raise ScriptError("Workflow script must define exactly one async main(wf)")
    a = mains[0].args
    if (
        [x.arg for x in a.args] != ["wf"]
        or a.posonlyargs
        or a.kwonlyargs
        or a.vararg
        or a.kwarg
        or a.defaults
    ):
        raise ScriptError("Workflow entry point must be `async def main(wf):`")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            raise ScriptError("Workflow scripts may not import modules")
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise ScriptError("Workflow scripts may not access dunder names")
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("__"):
                raise ScriptError("Workflow scripts may not access dunder attributes")
            root = root_name(node)
            if root == "wf" and (node.attr.startswith("_") or node.attr == "close"):
                raise ScriptError(
                    "Workflow scripts may not access private wf attributes"
                    " or call wf.close()"
                )
            if root in BANNED_ROOTS:
                raise ScriptError("Workflow scripts may not access unsafe modules")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in BANNED_CALLS
        ):
            raise ScriptError(f"Workflow scripts may not call `{node.func.id}`")


def send(message):
    PROTOCOL.write(json.dumps(message) + "\n")
    PROTOCOL.flush()


class Host:
    """Requests to the host and their answers."""

    def __init__(self, loop, lines):
        self._loop = loop
        self._waiting = {}
        self._counter = 0
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()

    def _read(self, lines):
        for line in lines:
            if line.strip():
                self._loop.call_soon_threadsafe(self._answer, json.loads(line))
        self._loop.call_soon_threadsafe(self._closed)

    def _answer(self, message):
        future = self._waiting.pop(message.get("id"), None)
        if future is None or future.done():
            return
        if message.get("ok"):
            future.set_result(message.get("result") or "")
        else:
            future.set_exception(RuntimeError(message.get("error") or "sub-agent failed"))

    def _closed(self):
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RuntimeError("the workflow host went away"))
        self._waiting.clear()

    async def run_agent(self, prompt, subagent_type, description):
        self._counter += 1
        future = self._loop.create_future()
        self._waiting[self._counter] = future
        send(
            {
                "id": self._counter,
                "op": "run_agent",
                "prompt": str(prompt),
                "subagent_type": str(subagent_type),
                "description": None if description is None else str(description),
            }
        )
        return await future


def fill(template, item):
    if callable(template):
        return str(template(item))
    text = item if isinstance(item, str) else json.dumps(item, default=str)
    return template.replace("{item}", text)


def cut(text):
    if len(text) <= MAX_REDUCE_INPUT_CHARS:
        return text
    return text[:MAX_REDUCE_INPUT_CHARS] + CUT_NOTE


def reduce_input(value):
    if not isinstance(value, (list, dict)):
        return cut(value if isinstance(value, str) else json.dumps(value, default=str))
    whole = json.dumps(value, indent=2, default=str)
    if len(whole) <= MAX_REDUCE_INPUT_CHARS:
        return whole
    is_dict = isinstance(value, dict)
    entries = list(value.items()) if is_dict else list(value)

    def show(kept):
        body = json.dumps(dict(kept) if is_dict else kept, indent=2, default=str)
        left_out = len(entries) - len(kept)
        if not left_out:
            return body
        return (
            f"{body}\n... [{left_out} of {len(entries)} items omitted to fit the "
            "reduce input limit]"
        )

    kept, size = [], 0
    for entry in entries:
        piece = len(json.dumps(dict([entry]) if is_dict else entry, default=str))
        if kept and size + piece > MAX_REDUCE_INPUT_CHARS:
            break
        kept.append(entry)
        size += piece
    while len(kept) > 1 and len(show(kept)) > MAX_REDUCE_INPUT_CHARS:
        kept.pop()
    return cut(show(kept))


class Workflow:
    """The `wf` object a script gets."""

    def __init__(self, host, limit):
        self._host = host
        self._limit = limit
        self._gate = asyncio.Semaphore(limit)

    async def run_agent(self, prompt, subagent_type="general-purpose", description=None):
        async with self._gate:
            return await self._host.run_agent(prompt, subagent_type, description)

    async def map_agents(
        self,
        items,
        prompt,
        subagent_type="general-purpose",
        max_concurrency=None,
        description=None,
    ):
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        gate = (
            self._gate
            if max_concurrency is None
            else asyncio.Semaphore(min(max_concurrency, self._limit))
        )

        async def one(number, item):
            text = fill(prompt, item)
            label = None if description is None else fill(description, item)
            async with gate:
                try:
                    return await self._host.run_agent(text, subagent_type, label)
                except Exception as err:
                    raise RuntimeError(f"[item {number}] {err}") from err

        results = await asyncio.gather(
            *(one(i + 1, item) for i, item in enumerate(items)), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            raise ExceptionGroup(
                "map_agents: one or more sub-agents failed",
                [f if isinstance(f, Exception) else RuntimeError(str(f)) for f in failed],
            )
        return [str(r) for r in results]

    async def reduce_agent(
        self, items, prompt, subagent_type="general-purpose", description=None
    ):
        return await self.run_agent(
            f"{prompt}\n\nInput:\n{reduce_input(items)}", subagent_type, description
        )

    async def pipeline(self, items, *stages):
        if not stages:
            raise ValueError("pipeline requires at least one stage")

        async def chain(number, item):
            value = item
            try:
                for stage in stages:
                    value = stage(value)
                    if inspect.isawaitable(value):
                        value = await value
                return value
            except Exception as err:
                print(f"pipeline: item {number} failed: {err}")
                return None

        return list(await asyncio.gather(*(chain(i + 1, x) for i, x in enumerate(items))))

    def flatten(self, values):
        out = []
        for value in values:
            if isinstance(value, list):
                out.extend(value)
            else:
                out.append(value)
        return out


SAFE_BUILTINS = {
    name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
    for name in (
        "abs all any bool dict enumerate Exception float IndexError int isinstance "
        "KeyError len list max min print range repr round RuntimeError set sorted "
        "str sum tuple type TypeError ValueError zip format"
    ).split()
}


def describe(err):
    if isinstance(err, BaseExceptionGroup):
        lines = [f"  [{i}] {e}" for i, e in enumerate(err.exceptions, start=1)]
        return f"{err.args[0]}:\n" + "\n".join(lines)
    return str(err)


async def run(job, lines):
    source = job.get("script", "")
    check_script(source)
    scope = {}
    exec(compile(source, "<dynamic-workflow>", "exec"), {"__builtins__": SAFE_BUILTINS}, scope)
    main = scope.get("main")
    if not inspect.iscoroutinefunction(main):
        raise ScriptError("Workflow entry point must be async")
    host = Host(asyncio.get_running_loop(), lines)
    wf = Workflow(host, int(job.get("max_concurrency", 8)))
    try:
        async with asyncio.timeout(TIMEOUT_SECONDS):
            return await main(wf)
    except TimeoutError:
        raise ScriptError(
            f"Workflow timed out after {TIMEOUT_SECONDS:.0f} seconds"
        ) from None


def entry():
    lines = iter(sys.stdin.readline, "")
    first = next(lines, "")
    try:
        result = asyncio.run(run(json.loads(first), lines))
    except Exception as err:
        send({"op": "done", "ok": False, "text": describe(err)})
        return
    send({"op": "done", "ok": True, "text": str(result)})


if __name__ == "__main__":
    entry()
