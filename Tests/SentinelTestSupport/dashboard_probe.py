#!/usr/bin/python3
"""Opens a page in Debian's headless Chromium, as a person would, and reports what it shows.

usage: dashboard_probe.py URL SCREENSHOT.png SECONDS

Drives Chromium over the DevTools protocol (python3-websocket): navigates to URL, waits until the dashboard shows a
visitor, a mood gauge, its three charts drawn and a camera (or SECONDS pass), saves a screenshot, and prints one line
of JSON: what the page displays (text of the gauges, visitor rows, camera rows, status, charts drawn). The Swift test
judges it. Chromium is killed on every exit path.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

STATE = """(() => { try {
  const text = sel => [...document.querySelectorAll(sel)].map(e => e.innerText.replace(/\\s+/g, ' ').trim());
  return JSON.stringify({
    status: document.getElementById('status').innerText,
    notice: document.getElementById('notice').innerText,
    gauges: [...document.querySelectorAll('[data-gauge]')].map(e => e.getAttribute('aria-label')),
    visitors: text('#visitors tr'),
    cameras: text('#cameras tr'),
    charts: [...document.querySelectorAll('canvas[data-drawn]')].map(e => e.id + ': ' + e.getAttribute('aria-label')),
    body: document.body.innerText,
  });
} catch (error) {
  return JSON.stringify({error: String(error), body: document.body ? document.body.innerText : ''});
} })()"""


def main():
    url, screenshot, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    profile = tempfile.mkdtemp(prefix="sentinel-chromium-")
    browser = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1280,1400", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.time() > deadline or browser.poll() is not None:
                sys.exit("chromium did not start")
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(p for p in pages if p["type"] == "page")
        socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        ids = iter(range(1, 1_000_000))

        def call(method, **params):
            number = next(ids)
            socket.send(json.dumps({"id": number, "method": method, "params": params}))
            while True:
                message = json.loads(socket.recv())
                if message.get("id") == number:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message.get("result", {})

        call("Page.enable")
        call("Page.navigate", url=url)
        deadline = time.time() + seconds
        while True:
            state = json.loads(call("Runtime.evaluate", expression=STATE, returnByValue=True)["result"]["value"])
            ready = state.get("visitors") and state.get("gauges") and len(state.get("charts", [])) == 3 and state.get("cameras")
            if ready or time.time() > deadline:
                break
            time.sleep(0.5)
        shot = call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(screenshot, "wb") as out:
            out.write(base64.b64decode(shot["data"]))
        print(json.dumps(state))
    finally:
        browser.kill()
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
