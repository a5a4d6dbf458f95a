#!/usr/bin/python3
"""Opens a page in Debian's headless Chromium and prints what a JavaScript expression says of it, as JSON.

usage: page_values.py URL EXPRESSION [SECONDS]

The expression is evaluated until it gives something other than null, false or empty (a chart drawn, a list filled),
or SECONDS (default 30) pass; its last value is printed. For pages whose test needs one figure the page computes
(a chart's axis, a layout's width), where the dashboard's and the zone editor's probes drive a whole session.
"""
import json
import sys

from chromium import Chromium


def main():
    url, expression = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30
    with Chromium() as browser:
        browser.open(url)
        print(json.dumps(browser.wait_for(expression, seconds)))


if __name__ == "__main__":
    main()
