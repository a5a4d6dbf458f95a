#!/usr/bin/python3
"""Edits zones in `sentinel zones` as an operator would, in Debian's headless Chromium, and reports what the page said.

usage: zone_editor_probe.py URL SCREENSHOT.png SECONDS

Moves the frame slider to 8 s (people in view, hidden). With the mouse: drags the entrance's top-right corner to (0.30, 0.15) of the frame, adds a zone, renames it "sofa",
drags its third corner to (0.70, 0.70), saves; then drags the display's first corner to (0.50, 0.90), which twists
it, and saves again. Unsaved then: drags the sofa's first edge from its middle to (0.55, 0.30), the counter's first
corner onto the display's second, selects the display and drags that shared corner to (0.66, 0.12). Prints one line of JSON: the page's state after loading, after the first save and after the
second (status, problems, zones drawn), and the zones and names the page holds at the end. The Swift test judges it against the file.
"""
import json
import sys

from chromium import Chromium

STATE = """JSON.stringify({
  status: document.getElementById('status').innerText,
  dirty: document.getElementById('dirty').innerText,
  problems: [...document.querySelectorAll('#problems li')].map(e => e.innerText),
  zones: [...document.querySelectorAll('#overlay polygon')].map(e => e.dataset.zone),
  masked: document.getElementById('masked').innerText,
  frame: document.getElementById('frame').naturalWidth,
})"""


# The zones as the page holds them, and each name drawn with whether it lies inside the frame.
EDITED = """JSON.stringify({
  zones: Object.fromEntries(zones[source].map(z => [z.name, z.points])),
  labels: (() => { const frame = document.getElementById('overlay').getBoundingClientRect();
    return [...document.querySelectorAll('#overlay text')].map(t => { const r = t.getBoundingClientRect();
      return { name: t.textContent, inside: r.left >= frame.left - 1 && r.right <= frame.right + 1
        && r.top >= frame.top - 1 && r.bottom <= frame.bottom + 1 }; }); })(),
})"""


def main():
    url, screenshot, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    report = {}
    with Chromium() as browser:
        browser.open(url)

        def state():
            return json.loads(browser.evaluate(STATE))

        def handle(kind, zone, key, index):
            """The centre of a handle, in the page's pixels."""
            return browser.evaluate(f"""(() => {{
              const r = document.querySelector('{kind}[data-zone="{zone}"][data-{key}="{index}"]').getBoundingClientRect();
              return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")

        def corner(zone, index):
            return handle("circle.corner", zone, "index", index)

        def at(x, y):
            """A point of the frame, as fractions, in the page's pixels."""
            return browser.evaluate(f"""(() => {{ const r = document.getElementById('overlay').getBoundingClientRect();
              return [r.left + {x} * r.width, r.top + {y} * r.height]; }})()""")

        def button(id):
            x, y = browser.evaluate(f"""(() => {{ const r = document.getElementById('{id}').getBoundingClientRect();
              return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
            browser.click(x, y)

        browser.wait_for("document.querySelectorAll('#overlay polygon').length > 0", seconds)
        # A frame with people in it: the slider to 8 s.
        browser.evaluate("(() => { const s = document.getElementById('at'); s.value = 8; s.dispatchEvent(new Event('change')); })()")
        browser.wait_for("/^[1-9]/.test(document.getElementById('masked').innerText)", seconds)
        report["loaded"] = state()
        browser.drag(corner("entrance", 1), at(0.30, 0.15))
        button("add")
        # Rename: click into the new zone's name, select it, type, leave the field.
        browser.evaluate("(() => { const i = [...document.querySelectorAll('#zones input')].pop(); i.focus(); i.select(); })()")
        browser.type("sofa")
        browser.evaluate("document.activeElement.blur()")
        browser.drag(corner("sofa", 2), at(0.70, 0.70))
        button("save")
        browser.wait_for("/Saved|Not saved|changed/.test(document.getElementById('status').innerText)", 30)
        report["saved"] = state()
        browser.drag(corner("display", 0), at(0.50, 0.90))
        button("save")
        browser.wait_for("/Saved|Not saved|changed/.test(document.getElementById('status').innerText)", 30)
        report["refused"] = state()
        # Not saved from here on: an edge's middle dragged out adds a corner there; a corner two zones share moves the
        # selected zone's; every name stays inside the frame.
        browser.drag(handle("circle.mid", "sofa", "after", 0), at(0.55, 0.30))
        browser.drag(corner("counter", 0), corner("display", 1))
        browser.evaluate("[...document.querySelectorAll('#zones input')].find(i => i.value === 'display').focus()")
        browser.drag(corner("display", 1), at(0.66, 0.12))
        report["edited"] = json.loads(browser.evaluate(EDITED))
        browser.screenshot(screenshot)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
