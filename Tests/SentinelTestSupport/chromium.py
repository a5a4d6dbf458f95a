"""Debian's headless Chromium, driven over the DevTools protocol (python3-websocket), for the page tests.

    with Chromium() as browser:
        browser.open(url)
        browser.wait_for("document.querySelectorAll('svg polygon').length == 3", seconds=60)
        browser.drag(from_xy, to_xy)

Chromium gets a fresh profile and is killed, and its profile removed, on every exit path.
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket


class Chromium:
    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="sentinel-chromium-")
        self.process = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "--window-size=1280,1400",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port_file = os.path.join(self.profile, "DevToolsActivePort")
            deadline = time.time() + 30
            while not os.path.exists(port_file) or not open(port_file).read().strip():
                if time.time() > deadline or self.process.poll() is not None:
                    raise RuntimeError("chromium did not start")
                time.sleep(0.1)
            port = open(port_file).read().split()[0]
            pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
            page = next(p for p in pages if p["type"] == "page")
            self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
            self.ids = iter(range(1, 1_000_000))
            self.call("Page.enable")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *_):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, **params):
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, url):
        self.call("Page.navigate", url=url)

    def evaluate(self, expression):
        """The value of a JavaScript expression (awaited if it is a promise), as JSON can carry it."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, seconds):
        """Evaluates `expression` until it is truthy or `seconds` pass; returns its last value."""
        deadline = time.time() + seconds
        while True:
            value = self.evaluate(expression)
            if value or time.time() > deadline:
                return value
            time.sleep(0.25)

    def mouse(self, kind, x, y, buttons=0, clicks=1):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", buttons=buttons, clickCount=clicks)

    def click(self, x, y):
        self.mouse("mousePressed", x, y, buttons=1)
        self.mouse("mouseReleased", x, y)

    def drag(self, start, end, steps=8):
        """A person's drag: press, move in steps, release."""
        self.mouse("mouseMoved", *start)
        self.mouse("mousePressed", *start, buttons=1)
        for step in range(1, steps + 1):
            x = start[0] + (end[0] - start[0]) * step / steps
            y = start[1] + (end[1] - start[1]) * step / steps
            self.mouse("mouseMoved", x, y, buttons=1)
        self.mouse("mouseReleased", *end)

    def type(self, text):
        self.call("Input.insertText", text=text)

    def screenshot(self, path):
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as out:
            out.write(base64.b64decode(shot["data"]))
