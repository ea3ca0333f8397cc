"""Schemathesis checks of the control plane's tenant isolation.

Loaded through SCHEMATHESIS_HOOKS by compat/control_fuzz.sh. When
CONTROL_FUZZ_FOREIGN is set, every request carries another tenant's
credential while the path names the owner tenant's ids: an answer must be a
refusal (401, 403 or 404) that mentions none of the owner's ids or names
(CONTROL_FUZZ_SECRETS, comma-separated).
"""

import os

import schemathesis

FOREIGN = os.environ.get("CONTROL_FUZZ_FOREIGN") == "1"
SECRETS = [s for s in os.environ.get("CONTROL_FUZZ_SECRETS", "").split(",") if s]
# B's own collection (list and create in B's path) is B's data: allowed.
OWN_TENANT = os.environ.get("CONTROL_FUZZ_CALLER_TENANT", "")


@schemathesis.check
def other_tenants_see_nothing(ctx, response, case):
    if not FOREIGN:
        return None
    if OWN_TENANT and f"/tenants/{OWN_TENANT}/" in case.formatted_path + "/":
        return None
    if case.formatted_path == "/health":
        return None
    text = response.text or ""
    for secret in SECRETS:
        if secret in text:
            raise AssertionError(f"another tenant's answer names {secret!r}: {text[:300]}")
    if response.status_code not in (400, 401, 403, 404, 405):
        raise AssertionError(
            f"another tenant's credential got {response.status_code}: {text[:300]}"
        )
    return None
