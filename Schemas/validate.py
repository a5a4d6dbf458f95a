#!/usr/bin/python3
"""Validates JSON lines against a JSON Schema (draft 2020-12) with Debian's python3-jsonschema.

Usage: validate.py SCHEMA EVENTS.jsonl. Prints one line per invalid event (line number, field path, reason) and
a summary; exits 1 if any event is invalid.
"""
import json
import sys

import jsonschema


def main():
    schema_path, events_path = sys.argv[1], sys.argv[2]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    count = invalid = 0
    with open(events_path) as f:
        for number, line in enumerate(f, 1):
            count += 1
            errors = sorted(validator.iter_errors(json.loads(line)), key=lambda e: list(e.absolute_path))
            for error in errors:
                path = "/".join(str(p) for p in error.absolute_path)
                print(f"{events_path}:{number}: {path or '(event)'}: {error.message}")
            invalid += bool(errors)
    print(f"{count} events, {invalid} invalid")
    sys.exit(1 if invalid or count == 0 else 0)


if __name__ == "__main__":
    main()
