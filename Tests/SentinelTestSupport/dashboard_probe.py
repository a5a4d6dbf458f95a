#!/usr/bin/python3
"""Opens a page in Debian's headless Chromium, as a person would, and reports what it shows.

usage: dashboard_probe.py URL SCREENSHOT.png SECONDS [mood]

Drives Chromium over the DevTools protocol (python3-websocket): navigates to URL, waits until the dashboard shows a
visitor, a mood gauge, its three charts drawn, a camera with its still and a zone left in the stream (opened with the aggregate token: a mood gauge and the
zones), and with "mood" until the overall mood shows a number (for the README's picture), or SECONDS pass. With the
visitor token it then clicks the first visitor (the visit's zones must show) and widens the date range to yesterday
and today (the visits chart must be redrawn per hour). It saves a screenshot and prints one line of JSON: what the
page displays (text of the gauges, visitor rows, the visit, camera rows and stills, status, charts drawn, the page's requests the server refused for access: 401, 403). The Swift test judges
it. Chromium is killed on every exit path.
"""
import json
import sys
import time

from chromium import Chromium

CLICK_VISITOR = """(() => {
  const row = [...document.querySelectorAll('#visitors tr')].find(r => r.cells[2].innerText !== '\u2013');
  if (!row) return null;
  row.querySelector('button[data-visit]').click();
  return row.cells[0].innerText;
})()"""
WIDEN_RANGE = """(() => {
  const from = document.getElementById('range-from');
  const day = new Date(new Date(from.value + 'T12:00') - 86400e3);
  from.value = day.toISOString().slice(0, 10);
  from.dispatchEvent(new Event('change', { bubbles: true }));
  return from.value;
})()"""

STATE = """(() => { try {
  const text = sel => [...document.querySelectorAll(sel)].map(e => e.innerText.replace(/\\s+/g, ' ').trim());
  return JSON.stringify({
    scope: document.body.dataset.scope || '',
    why: document.getElementById('why').innerText,
    zones: text('#zones tr'),
    zonesWhy: document.getElementById('zones-why').innerText,
    status: document.getElementById('status').innerText,
    notice: document.getElementById('notice').innerText,
    gauges: [...document.querySelectorAll('[data-gauge]')].map(e => e.getAttribute('aria-label')),
    visitors: text('#visitors tr'),
    cameras: text('#cameras tr'),
    charts: [...document.querySelectorAll('canvas[data-drawn]')].map(e => e.id + ': ' + e.getAttribute('aria-label')),
    chartStarts: Object.fromEntries([...document.querySelectorAll('canvas[data-drawn]')].map(e => [e.id, e.dataset.first])),
    // Cards whose content is wider than they are: cut off at the edge, or only seen by scrolling.
    clipped: [...document.querySelectorAll('section')].filter(s => s.scrollWidth > s.clientWidth + 1)
      .map(s => s.querySelector('h2').innerText),
    visit: document.getElementById('visit').innerText,
    stays: text('#visit-stays tr'),
    rangeBucket: document.getElementById('range-bucket').innerText,
    stills: [...document.querySelectorAll('#stills figure')].map(f => ({
      caption: f.querySelector('figcaption').innerText,
      width: f.querySelector('img') ? f.querySelector('img').naturalWidth : 0,
      zones: [...f.querySelectorAll('text')].map(t => t.textContent),
    })),
    chartNotes: text('.chart + .why').filter(t => t),
    stream: document.getElementById('log').innerText.split('\\n').filter(l => l),
    body: document.body.innerText,
    // Refused for access (401, 403); a 503 from /healthz is an answer (a camera down), not a refusal.
    refused: performance.getEntriesByType('resource').filter(e => [401, 403].includes(e.responseStatus))
      .map(e => e.responseStatus + ' ' + new URL(e.name).pathname)
      .filter(request => !request.endsWith(' /favicon.ico')),  // the browser's own request, without the token
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
                ready = (state.get("visitors") and state.get("gauges") and len(state.get("charts", [])) == 3 and state.get("cameras")
                         and any(still["width"] for still in state.get("stills", []))
                         and any(" visitor.zoneExited " in line for line in state.get("stream", [])))
            if mood:
                ready = ready and any(g.startswith("overall: ") and g[9:].isdigit() for g in state.get("gauges", []))
            if ready or time.time() > deadline:
                break
            time.sleep(0.5)
        if state.get("scope") == "visitors" and state.get("visitors"):
            # A person's next steps: one visit, then a wider range of days. A visitor in a zone is clicked (one just
            # seen may not have entered any yet); the list refreshes, so if the visitor clicked had left the list by
            # then, or no one was in a zone, another is clicked, until the visit shows its zones.
            clicked, visitors = None, state.get("visitors", [])

            def shown(state):
                return clicked and state.get("stays") and (state.get("visit") or "").startswith(clicked + " ")

            while not shown(state) and time.time() < deadline + 30:
                state = json.loads(browser.evaluate(STATE))
                # The list as it was when a visitor was clicked: the recording loops, and by the last step below
                # everyone may have left (the page then rightly lists nobody).
                visitors = state.get("visitors", [])
                clicked = browser.evaluate(CLICK_VISITOR)
                shown_until = time.time() + 5
                while clicked and not shown(state) and time.time() < shown_until:
                    time.sleep(0.5)
                    state = json.loads(browser.evaluate(STATE))
                if not clicked:
                    time.sleep(0.5)
            state["clicked"] = clicked
            browser.evaluate(WIDEN_RANGE)
            while state.get("rangeBucket") != "per hour" and time.time() < deadline + 40:
                time.sleep(0.5)
                state = {**json.loads(browser.evaluate(STATE)), "clicked": state["clicked"]}
            state["visitors"] = visitors
        browser.screenshot(screenshot)
        print(json.dumps(state))


if __name__ == "__main__":
    main()
