"""Expected answers of LiteLLM (the library the reference bills and lists
models with) for the Rust parity test `crates/llm/tests/suite/litellm_parity.rs`.

Reads the shipped table (crates/llm/data/model_prices_and_context_window.json)
into LiteLLM, samples chat models across providers, and prints one JSON
object: `costs` (model, token counts, litellm.cost_per_token total) and
`models` (the reference agent server's /api/llm/models answer per provider).

`--costs-only` prints only `costs` and skips the reference server's import,
for the SDK's check of the cost a conversation records
(`crates/sdk/tests/suite/conversation_costs.rs`, the 100 + 10 token case).
"""

import asyncio
import json
import os
import pathlib
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import litellm  # noqa: E402
from litellm import Usage  # noqa: E402

root = pathlib.Path(__file__).resolve().parents[2]
table = json.loads((root / "crates/llm/data/model_prices_and_context_window.json").read_text())
litellm.model_cost.clear()
litellm.model_cost.update(table)
try:
    from litellm.utils import _invalidate_model_cost_lowercase_map

    _invalidate_model_cost_lowercase_map()
except ImportError:
    pass

PROVIDERS = [
    "openai", "anthropic", "gemini", "vertex_ai-language-models", "deepseek", "mistral",
    "groq", "xai", "openrouter", "together_ai", "fireworks_ai", "bedrock", "bedrock_converse",
    "azure", "cohere_chat", "perplexity", "moonshot", "dashscope", "cerebras", "deepinfra",
]
PER_PROVIDER = 4
CASES = [
    # prompt (cache included), completion, cache read, cache write, reasoning
    (100, 10, 0, 0, 0),
    (1000, 200, 0, 0, 0),
    (250_000, 1000, 50_000, 10_000, 0),
    (1500, 500, 400, 0, 120),
]

by_provider = {}
for key, info in table.items():
    if not isinstance(info, dict) or info.get("mode") != "chat":
        continue
    if not info.get("input_cost_per_token") and not info.get("tiered_pricing"):
        continue
    by_provider.setdefault(info.get("litellm_provider"), []).append(key)

samples = []
for provider in PROVIDERS:
    keys = sorted(by_provider.get(provider, []))
    if not keys:
        continue
    step = max(1, len(keys) // PER_PROVIDER)
    for key in keys[::step][:PER_PROVIDER]:
        # The name a user configures: the key, prefixed when LiteLLM needs it.
        name = key
        prefix = {"vertex_ai-language-models": "vertex_ai", "bedrock_converse": "bedrock"}.get(
            provider, provider
        )
        if "/" not in key and provider not in ("openai", "anthropic"):
            name = f"{prefix}/{key}"
        samples.append((name, key))

costs = []
for name, key in samples:
    for prompt, completion, read, write, reasoning in CASES:
        if reasoning:
            usage = Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=prompt + completion,
                prompt_tokens_details={"cached_tokens": read},
                completion_tokens_details={"reasoning_tokens": reasoning},
            )
            p, c = litellm.cost_per_token(
                model=name, prompt_tokens=prompt, completion_tokens=completion, usage_object=usage
            )
        else:
            p, c = litellm.cost_per_token(
                model=name,
                prompt_tokens=prompt,
                completion_tokens=completion,
                cache_read_input_tokens=read,
                cache_creation_input_tokens=write,
            )
        costs.append({
            "model": name, "key": key, "prompt": prompt, "completion": completion,
            "cache_read": read, "cache_write": write, "reasoning": reasoning, "cost": p + c,
        })

if "--costs-only" in sys.argv:
    json.dump({"costs": costs}, sys.stdout)
    sys.exit(0)

from openhands.agent_server.llm_router import list_models, list_providers  # noqa: E402

models = {}
for provider in [None, "anthropic", "openai", "gemini", "openhands", "openrouter", "mistral"]:
    answer = asyncio.run(list_models(provider=provider))
    models[provider or ""] = answer.models
providers = asyncio.run(list_providers()).providers

json.dump({"costs": costs, "models": models, "providers": providers}, sys.stdout)
