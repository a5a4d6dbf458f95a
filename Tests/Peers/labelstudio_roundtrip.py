"""Sentinel's Label Studio tasks through a real Label Studio (PyPI, installed by the Makefile into .build/label-studio):
started on loopback with a throwaway data folder, a project made with the video object tracking template, Sentinel's
files imported (one as annotations, one as predictions), the project exported through the API, Label Studio stopped.

Usage: labelstudio_roundtrip.py VENV WORK CONFIG.xml IMPORT.json... [--photos DIR LABELS.csv CLASSIFICATION.xml]
Writes WORK/export.json (every task) and prints a JSON summary: Label Studio's version, what each import created, and
every validation complaint Label Studio logged. With --photos, an image-classification project too, as an operator
labels faces: each photo of DIR uploaded, annotated with its label of LABELS.csv (image,emotion) as a choice, the
project exported to WORK/emotion-export.json.
"""

import csv
import uuid

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
photos = None
if "--photos" in imports:
    at = imports.index("--photos")
    photos, imports = imports[at + 1:at + 4], imports[:at]
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


def export(project, name):
    request = urllib.request.Request(
        f"{base}/api/projects/{project}/export?exportType=JSON&download_all_tasks=true",
        headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        open(os.path.join(work, name), "wb").write(response.read())


def upload(project, folder, names):
    """Uploads the photos as files, as Label Studio's import page does (multipart)."""
    boundary = uuid.uuid4().hex
    body = b""
    for name in names:
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\n"
                 f"Content-Type: application/octet-stream\r\n\r\n").encode()
        body += open(os.path.join(folder, name), "rb").read() + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return call("POST", f"/api/projects/{project}/import", body, f"multipart/form-data; boundary={boundary}")


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
    export(project["id"], "export.json")
    if photos:
        folder, labels_file, classification = photos
        labels = {row["image"]: row["emotion"] for row in csv.DictReader(open(labels_file))}
        faces = call("POST", "/api/projects",
                     json.dumps({"title": "faces", "label_config": open(classification).read()}).encode())
        created.append(upload(faces["id"], folder, sorted(labels)))
        listed = call("GET", f"/api/tasks?project={faces['id']}&page_size=1000")
        for task in listed["tasks"] if isinstance(listed, dict) else listed:
            # Label Studio names an upload /data/upload/PROJECT/XXXXXXXX-NAME.
            name = task["data"]["image"].rsplit("/", 1)[-1].split("-", 1)[1]
            result = [{"from_name": "emotion", "to_name": "image", "type": "choices",
                       "value": {"choices": [labels[name]]}}]
            call("POST", f"/api/tasks/{task['id']}/annotations", json.dumps({"result": result}).encode())
        export(faces["id"], "emotion-export.json")
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
    "imports": [{k: c.get(k) or 0 for k in ("task_count", "annotation_count", "prediction_count")} for c in created],
    "complaints": [c[:300] for c in complaints],
}))
