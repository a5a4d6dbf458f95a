#!/usr/bin/env python3
"""Validates HTTP responses against the OpenAPI document (python3-jsonschema, Draft 2020-12).

Usage: validate_openapi.py OPENAPI.json RESPONSES.json, where RESPONSES.json is a list of
{"path": "/api/zones", "status": 200, "body": {...}} (`path` is the document's path template), or of
{"component": "Envelope", "body": {...}} for what has no response of its own (an SSE message's data).
Prints one line per failure and a summary; exits 1 if any failed.
"""
import json
import sys

import jsonschema

document = json.load(open(sys.argv[1]))
responses = json.load(open(sys.argv[2]))
failures = 0
for item in responses:
    if "component" in item:
        schema = {"$ref": f"#/components/schemas/{item['component']}", "components": document["components"]}
        for error in jsonschema.Draft202012Validator(schema).iter_errors(item["body"]):
            print(f"{item['component']}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
            failures += 1
        continue
    operation = document["paths"][item["path"]]["get"]
    declared = operation["responses"].get(str(item["status"]))
    if declared is None:
        print(f"{item['path']}: status {item['status']} is not documented")
        failures += 1
        continue
    schema = dict(next(iter(declared["content"].values()))["schema"])
    schema["components"] = document["components"]
    validator = jsonschema.Draft202012Validator(schema)
    for error in validator.iter_errors(item["body"]):
        print(f"{item['path']} {item['status']}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
        failures += 1
print(f"{len(responses)} responses, {failures} problems")
sys.exit(1 if failures else 0)
