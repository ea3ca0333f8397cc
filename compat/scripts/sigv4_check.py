"""Recomputes an AWS SigV4 signature with botocore (an implementation
independent of ours) for a request a test server captured.

Reads JSON on stdin: method, url (as sent), headers (name -> value, as
received), body (text), access_key, secret_key, session_token (or null),
region, service. Prints JSON: the Authorization header botocore computes
for the same request at the request's own X-Amz-Date.
"""

import json
import sys

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def main() -> None:
    req_in = json.load(sys.stdin)
    headers = {k.lower(): v for k, v in req_in["headers"].items()}
    signed = [
        h.strip()
        for h in headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    ]
    # Only the headers the client signed, minus those botocore adds itself.
    kept = {h: headers[h] for h in signed if h not in ("host",)}
    request = AWSRequest(
        method=req_in["method"],
        url=req_in["url"],
        data=req_in["body"].encode(),
        headers=kept,
    )
    stamp = headers["x-amz-date"]
    request.context["timestamp"] = stamp
    creds = Credentials(req_in["access_key"], req_in["secret_key"], req_in.get("session_token"))
    auth = SigV4Auth(creds, req_in["service"], req_in["region"])
    canonical = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical)
    signature = auth.signature(string_to_sign, request)
    scope = auth.scope(request)
    header_list = auth.signed_headers(auth.headers_to_sign(request))
    print(
        json.dumps(
            {
                "authorization": f"AWS4-HMAC-SHA256 Credential={scope}, "
                f"SignedHeaders={header_list}, Signature={signature}",
                "canonical_request": canonical,
            }
        )
    )


if __name__ == "__main__":
    main()
