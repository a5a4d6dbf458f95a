#!/usr/bin/python3
"""Opens a page in Debian's headless Chromium, as a person would, and reports what it shows.

usage: dashboard_probe.py URL SCREENSHOT.png SECONDS [mood]

Drives Chromium over the DevTools protocol (python3-websocket): navigates to URL, waits until the dashboard shows a
visitor, a mood gauge, its three charts drawn, a camera with its still and a zone left in the stream (opened with the aggregate token: a mood gauge and the
zones), and with "mood" until the overall mood shows a number (for the README's picture), or SECONDS pass. With the
visitor token it then clicks the first visitor (the visit's zones must show) and widens the date range to yesterday
and today (the visits chart must be redrawn per hour). It saves a screenshot and prints one line of JSON: what the
page displays (text of the gauges, visitor rows, the cards cut at six widths from 1,024 to 1,920 px, the visit, camera rows and stills, status, charts drawn, the page's requests the server refused for access: 401, 403). The Swift test judges
it. Chromium is killed on every exit path.
"""
import json
import sys
import time

from chromium import Chromium
from stamp_png import stamp

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

# Cards whose content is wider than they are: cut off at the edge, or only seen by scrolling.
CLIPPED = """JSON.stringify([...document.querySelectorAll('section')].filter(s => s.scrollWidth > s.clientWidth + 1)
  .map(s => s.querySelector('h2').innerText))"""

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


def describe(shown):
    """The page as the screenshot shows it, in one sentence of plain ASCII (a PNG's tEXt is Latin-1)."""
    def plural(n, word):
        return f"{n} {word}{'' if n == 1 else 's'}"
    # A gauge's label is "title: reading"; the zone gauges' titles are "camera \u00b7 zone".
    dot = " \u00b7 "
    moods = [label.replace(": ", " ", 1).split(dot)[-1] for label in shown["gauges"]]
    parts = ["The dashboard on the demo recording: mood " + ", ".join(moods)]
    if shown.get("scope") == "visitors":
        parts.append(plural(len(shown["visitors"]), "visitor") + " here now")
        if shown.get("stays"):
            parts.append("one visit opened, its " + plural(len(shown["stays"]), "zone") + " timed")
    parts += [f"camera {row.split()[0]} {row.split()[1]} at {row.split()[2]} fps" for row in shown["cameras"]]
    parts += [f"its still ({still['caption'].split(dot)[-1]}, zones drawn)" for still in shown["stills"]]
    notes = shown.get("chartNotes") or []
    charts = len(shown["charts"])
    if not notes:
        parts.append(f"{charts} charts drawn")
    else:
        why = "until their first whole bucket ends" if all("Only whole" in n for n in notes) else "(figures withheld)"
        drawn = charts - len(notes)
        parts.append(f"the {charts} charts empty {why}" if drawn == 0 else f"{drawn} of {charts} charts drawn, the others empty {why}")
    return ("; ".join(parts) + ".").encode("ascii", "replace").decode()


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
        # Every card at a window's usual widths, and where the grid has three columns at their narrowest (from 1,420
        # px, cut there before), with what the page shows by then; 1,280 last, for the screenshot.
        state["clipped"] = {}
        for width in (1920, 1500, 1440, 1400, 1024, 1280):
            browser.call("Emulation.setDeviceMetricsOverride", width=width, height=1400, deviceScaleFactor=1, mobile=False)
            time.sleep(0.5)
            state["clipped"][str(width)] = json.loads(browser.evaluate(CLIPPED))
        # What the picture shows, in words: the alt text the docs must give it (DocumentationTests). The page keeps
        # changing (the stream, the still's time): taken again until it says the same before and after the picture.
        for _ in range(10):
            before = describe(json.loads(browser.evaluate(STATE)))
            browser.screenshot(screenshot)
            if describe(json.loads(browser.evaluate(STATE))) == before:
                break
        stamp(screenshot, "Description", before)
        print(json.dumps(state))


if __name__ == "__main__":
    main()
