"""Sentinel's Home Assistant discovery configs as Home Assistant would take them: each against the documented schema
(homeassistant-mqtt-sensor.schema.json beside this file), then its value_template rendered with Jinja, as Home
Assistant renders it, on the retained message of its state_topic (`value_json`). A sensor with a state_class must give
a number (or None: unknown, for a suppressed figure); an enum sensor one of its options.

Usage: homeassistant_discovery.py MESSAGES.json, a {topic: payload text} object. Exits 1 on any problem.
"""

import json
import os
import sys

import jinja2
import jsonschema

messages = json.load(open(sys.argv[1]))
schema = json.load(open(os.path.join(os.path.dirname(__file__), "homeassistant-mqtt-sensor.schema.json")))
environment = jinja2.Environment()
problems = []
for topic, payload in sorted(messages.items()):
    if not topic.startswith("homeassistant/"):
        continue
    config = json.loads(payload)
    for error in jsonschema.Draft202012Validator(schema).iter_errors(config):
        problems.append(f"{topic}: {'/'.join(map(str, error.path))}: {error.message}")
    state = messages.get(config.get("state_topic"))
    if state is None:
        problems.append(f"{topic}: nothing retained on {config.get('state_topic')}")
        continue
    value = environment.from_string(config["value_template"]).render(value_json=json.loads(state)).strip()
    entity = config.get("default_entity_id")
    if config.get("state_class"):
        try:
            float(value)
        except ValueError:
            if value != "None":
                problems.append(f"{entity}: {value!r} is not a number, though the state class is {config['state_class']}")
    if config.get("device_class") == "enum" and value not in config["options"] + ["None"]:
        problems.append(f"{entity}: {value!r} is not among {config['options']}")
    print(f"{entity} = {value} {config.get('unit_of_measurement') or ''} ({config.get('state_class') or config.get('device_class') or 'text'})")
print(f"{len(problems)} problems")
for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
