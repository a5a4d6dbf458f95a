#!/usr/bin/python3
"""Opens a page in Debian's headless Chromium, as a person would, and reports what it shows.

usage: dashboard_probe.py URL SCREENSHOT.png SECONDS [mood]

Drives Chromium over the DevTools protocol (python3-websocket): navigates to URL, waits until the dashboard shows a
visitor, a mood gauge, its three charts drawn and a camera (opened with the aggregate token: a mood gauge and the
zones), and with "mood" until the overall mood shows a number (for the README's picture), or SECONDS pass, saves a screenshot, and prints one line
of JSON: what the page displays (text of the gauges, visitor rows, camera rows, status, charts drawn). The Swift test
judges it. Chromium is killed on every exit path.
"""
import json
import sys
import time

from chromium import Chromium

STATE = """(() => { try {
  const text = sel => [...document.querySelectorAll(sel)].map(e => e.innerText.replace(/\\s+/g, ' ').trim());
  return JSON.stringify({
    scope: document.body.dataset.scope || '',
    why: document.getElementById('why').innerText,
    zones: text('#zones tr'),
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
    mood = sys.argv[4:] == ["mood"]
    with Chromium() as browser:
        browser.open(url)
        deadline = time.time() + seconds
        while True:
            state = json.loads(browser.evaluate(STATE))
            if state.get("scope") == "aggregates":
                ready = state.get("gauges") and state.get("zones") and state.get("why")
            else:
                ready = state.get("visitors") and state.get("gauges") and len(state.get("charts", [])) == 3 and state.get("cameras")
            if mood:
                ready = ready and any(g.startswith("overall: ") and g[9:].isdigit() for g in state.get("gauges", []))
            if ready or time.time() > deadline:
                break
            time.sleep(0.5)
        browser.screenshot(screenshot)
        print(json.dumps(state))


if __name__ == "__main__":
    main()
