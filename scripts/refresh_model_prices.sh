#!/usr/bin/env bash
# Refresh the model price/context table and the lists derived from LiteLLM
# (the library the reference calls models through) in crates/llm/data/:
#
#   model_prices_and_context_window.json  LiteLLM's table, copied verbatim
#   litellm_providers.json                LiteLLM's provider names (/api/llm/providers) and
#                                          the models it lists besides the table's keys
#   verified_models.json                  the reference's verified models by provider
#                                          (/api/llm/models/verified)
#
# The data come from the pinned packages of the compat venv (compat/setup.sh);
# to move to a newer table, bump the pins there and run this script.
#
#   COMPAT_VENV  venv location (default /var/cache/openhands-rs/compat-venv)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${COMPAT_VENV:-/var/cache/openhands-rs/compat-venv}"
out="$here/crates/llm/data"
[[ -x "$venv/bin/python" ]] || bash "$here/compat/setup.sh"
mkdir -p "$out"
export LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1 DO_NOT_TRACK=1
"$venv/bin/python" - "$out" <<'PY'
import json, pathlib, shutil, sys
from importlib.metadata import version

import litellm
from openhands.sdk.llm.utils.verified_models import VERIFIED_MODELS

out = pathlib.Path(sys.argv[1])
table = pathlib.Path(litellm.__file__).parent / "model_prices_and_context_window_backup.json"
json.loads(table.read_text())  # refuse a broken copy
shutil.copyfile(table, out / "model_prices_and_context_window.json")
providers = sorted({p if isinstance(p, str) else p.value for p in litellm.provider_list} - {""})
# The table's model entries (our parser skips `sample_spec`, LiteLLM lists it).
keys = {k for k, v in json.loads(table.read_text()).items() if isinstance(v, dict) and k != "sample_spec"}
listed = set(litellm.model_list) | set(litellm.model_cost)
extra = sorted(m for m in listed if isinstance(m, str) and m not in keys)
(out / "litellm_providers.json").write_text(json.dumps(
    {"litellm_version": version("litellm"), "providers": providers, "extra_models": extra},
    indent=1) + "\n")
(out / "verified_models.json").write_text(json.dumps(
    {"openhands_sdk_version": version("openhands-sdk"), "models": VERIFIED_MODELS}, indent=1) + "\n")
print(f"litellm {version('litellm')}: {len(json.loads(table.read_text()))} table entries, "
      f"{len(providers)} providers; openhands-sdk {version('openhands-sdk')}: "
      f"{sum(map(len, VERIFIED_MODELS.values()))} verified models")
PY
