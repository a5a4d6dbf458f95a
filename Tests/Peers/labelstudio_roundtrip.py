"""Sentinel's Label Studio tasks through a real Label Studio (PyPI, installed by the Makefile into .build/label-studio):
started on loopback with a throwaway data folder, a project made with the video object tracking template, Sentinel's
files imported (one as annotations, one as predictions), the project exported through the API, Label Studio stopped.

Usage: labelstudio_roundtrip.py VENV WORK CONFIG.xml IMPORT.json... Writes WORK/export.json (every task) and prints a
JSON summary: Label Studio's version, what each import created, and every validation complaint Label Studio logged.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

venv, work, config_file = sys.argv[1], sys.argv[2], sys.argv[3]
imports = sys.argv[4:]
token = "0123456789abcdef0123456789abcdef01234567"
data = os.path.join(work, "label-studio-data")
os.makedirs(data, exist_ok=True)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
environment = dict(os.environ, LABEL_STUDIO_BASE_DATA_DIR=data, SENTRY_DSN="", PYTHONPATH="")
log = open(os.path.join(work, "label-studio.log"), "w")
server = subprocess.Popen(
    [f"{venv}/bin/label-studio", "start", "--no-browser", "--host", "127.0.0.1", "--port", str(port), "--data-dir",
     data, "--username", "sentinel@localhost", "--password", "sentinel-test", "--user-token", token],
    stdout=log, stderr=subprocess.STDOUT, env=environment, start_new_session=True)
base = f"http://127.0.0.1:{port}"


def call(method, path, body=None, content_type="application/json"):
    request = urllib.request.Request(base + path, data=body, method=method,
                                     headers={"Authorization": f"Token {token}", "Content-Type": content_type})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


try:
    deadline = time.time() + 240
    while True:
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            sys.exit(f"Label Studio did not start (see {log.name})")
        time.sleep(1)
    # Label Studio 1.23 turns the legacy token off for new organisations: on again for this one, as an admin would.
    manage = subprocess.run(
        [f"{venv}/bin/python", "-c", "import label_studio, os; print(os.path.dirname(label_studio.__file__))"],
        capture_output=True, text=True, env=environment, check=True).stdout.strip()
    subprocess.run(
        [f"{venv}/bin/python", os.path.join(manage, "manage.py"), "shell", "-c",
         "from jwt_auth.models import JWTSettings\nfrom organizations.models import Organization\n"
         "for o in Organization.objects.all():\n"
         "    s, _ = JWTSettings.objects.get_or_create(organization=o)\n"
         "    s.legacy_api_tokens_enabled = True\n    s.save()\n"],
        capture_output=True, env=environment, check=True)
    project = call("POST", "/api/projects", json.dumps({"title": "sentinel", "label_config": open(config_file).read()}).encode())
    created = []
    for path in imports:
        body = open(path, "rb").read()
        created.append(call("POST", f"/api/projects/{project['id']}/import", body))
    version = call("GET", "/api/version").get("release")
    request = urllib.request.Request(
        f"{base}/api/projects/{project['id']}/export?exportType=JSON&download_all_tasks=true",
        headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        open(os.path.join(work, "export.json"), "wb").write(response.read())
finally:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
    log.close()
text = open(log.name).read()
complaints = re.findall(r"^.*(?:validation failed|Missing required field|Invalid value).*$", text, re.MULTILINE | re.IGNORECASE)
print(json.dumps({
    "version": version,
    "imports": [{k: c.get(k) for k in ("task_count", "annotation_count", "prediction_count")} for c in created],
    "complaints": [c[:300] for c in complaints],
}))
