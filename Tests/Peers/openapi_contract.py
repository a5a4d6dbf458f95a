"""Sentinel's API against its own description, judged by the tools an API's users run (PyPI, installed by the Makefile
into .build/openapi-tools): openapi-spec-validator on the /openapi.json the server serves, then openapi-core on live
requests and their responses, each request sent to the running server with urllib.

Usage: openapi_contract.py BASE_URL TOKEN|- REQUESTS.json
REQUESTS.json: a list of {"path": "/api/visitors", "query": {"from": "..."}, "pattern": "/api/visitors/{faceId}",
"status": 200}. Prints one line per request and a summary; exits 1 on any problem.
"""

import json
import sys
import urllib.error
import urllib.parse
import urllib.request

from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse
from openapi_spec_validator import validate
from openapi_spec_validator import __version__ as spec_validator_version
import openapi_core

base, token, requests_file = sys.argv[1], sys.argv[2], sys.argv[3]
headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}


def get(path, query):
    url = base + path + ("?" + urllib.parse.urlencode(query) if query else "")
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


status, _, body = get("/openapi.json", None)
spec = json.loads(body)
validate(spec)
print(f"openapi-spec-validator {spec_validator_version}: /openapi.json is valid OpenAPI {spec['openapi']}")
api = OpenAPI.from_dict(spec)
problems = 0
requests = json.load(open(requests_file))
for item in requests:
    status, response_headers, body = get(item["path"], item.get("query"))
    content_type = response_headers.get("Content-Type", "").split(";")[0]
    request = MockRequest(
        base, "get", item["path"], path_pattern=item.get("pattern"), args=item.get("query"), headers=headers,
        view_args=item.get("view"))
    # A text body (CSV) is handed over as text, as a web framework's adapter would.
    data = body.decode() if content_type.startswith("text/") else body
    response = MockResponse(data, status_code=status, headers=response_headers, content_type=content_type)
    errors = []
    if status != item["status"]:
        errors.append(f"status {status}, expected {item['status']}: {body[:200]!r}")
    # A request the description forbids (a malformed date, an unknown bucket) must be one openapi-core refuses too.
    try:
        api.validate_request(request)
        if item.get("invalid"):
            errors.append("request: openapi-core takes what the server refused")
    except Exception as error:  # openapi-core's own errors: every one is a finding
        if not item.get("invalid"):
            errors.append(f"request: {type(error).__name__}: {str(error)[:300]} {str(error.__cause__)[:300]}")
    try:
        api.validate_response(request, response)
    except Exception as error:
        errors.append(f"response: {type(error).__name__}: {str(error)[:300]} {str(error.__cause__)[:300]}")
    problems += len(errors)
    print(f"{status} {item['path']} {item.get('query') or ''}: " + ("; ".join(errors) if errors else "ok"))
print(f"openapi-core {openapi_core.__version__}: {len(requests)} requests, {problems} problems")
sys.exit(1 if problems else 0)
