#!/usr/bin/env python3
"""The matrix's pages for a team (ctest: matrix_report), written by `lockstep matrix --report DIR`.

Cells: memory and ext:node-redlock in sequential, gc-pause (as expected), slow-acquire and
clock-jump (node-redlock's documented findings; memory: not applicable). Checked in the files: matrix.md opens with
the counts and a grid; matrix.html opens with the counts, filters and the grid, each mark links to
a timeline that exists, a finding's explanation is written in its cell. (A cell that differs, in
matrix.md and matrix.html: tests/replay_lines_test.py.)
Checked in a real browser (chromium --headless): at 1280x800 the grid and a finding's explanation
are on the first screen without scrolling, the page is no wider than the window, and the status
filter hides the marks it unticks; a screenshot is left in the build directory (matrix.png).

Exit 77 (skipped, saying why) without chromium or without Node and the npm packages
(services/ext/node/node_modules): the checks that need them do not run.

Usage: matrix_report_test.py LOCKSTEP_BINARY OUT_DIR
"""
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
WIDTH, HEIGHT = 1280, 800

# Runs after the page's own script: what a reader sees on the first screen, then the filters.
PROBE = """<script>
(function () {
  const r = {};
  const on_screen = e => { const b = e.getBoundingClientRect();
    return b.height > 0 && b.top >= 0 && b.left >= 0 && b.bottom <= innerHeight && b.right <= innerWidth; };
  r.grid_on_screen = on_screen(document.querySelector("table.grid thead"));
  const why = document.querySelector("div.why.finding");
  r.finding_why = why ? why.textContent : "";
  r.finding_on_screen = why ? on_screen(why) : false;
  r.page_width = document.documentElement.scrollWidth;
  r.inner_width = innerWidth;
  const box = document.querySelector("input[data-status=expected]");
  box.checked = false;
  box.dispatchEvent(new Event("input"));
  r.expected_hidden = [...document.querySelectorAll("a.cell.expected")].every(a => a.offsetParent === null);
  r.others_shown = [...document.querySelectorAll("a.cell.finding")].every(a => a.offsetParent !== null);
  document.body.setAttribute("data-probe", JSON.stringify(r));
})();
</script>"""


def check(condition, what, result=None):
    if not condition:
        detail = "" if result is None else "\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
            result.returncode, result.stdout[-3000:], result.stderr[-3000:])
        sys.exit("FAILED: %s%s" % (what, detail))


def have_node():
    if shutil.which("node") is None:
        return False
    return os.path.isdir(os.path.join(ROOT, "services", "ext", "node", "node_modules"))


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def browser(binary_path, page, *args):
    return subprocess.run([binary_path, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--window-size=%d,%d" % (WIDTH, HEIGHT), *args,
                           "file://" + page], capture_output=True, text=True, timeout=120)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
    return struct.unpack(">II", head[16:24])


def files(out):
    md = open(os.path.join(out, "matrix.md")).read()
    first = [l for l in md.splitlines() if l.strip()][:2]
    check(first[1] == "**12 cells: 8 as expected, 4 documented findings, 0 differ, 0 not "
                      "applicable.**",
          "matrix.md opens with the counts: %r" % first)
    check("| scenario | memory | ext:node-redlock |" in md and "| slow-acquire | – | ⚑ ⚑ |" in md,
          "matrix.md has the grid, a position without cells marked")
    page = open(os.path.join(out, "matrix.html")).read()
    check(page.index('class="summary"') < page.index('class="filters"') <
          page.index('<table class="grid">') < page.index("Every cell"),
          "matrix.html: counts, filters, the grid, then every cell")
    hrefs = re.findall(r'<a class="cell [a-z]+"[^>]* href="([^"]+)"', page)
    check(len(hrefs) == len(re.findall(r'<a class="cell (?:expected|finding|differs)"', page)),
          "every mark of a cell that ran links to its run")
    for href in hrefs:
        check(os.path.exists(os.path.join(out, html.unescape(href))),
              "a mark's timeline exists: " + href)
    check('<div class="why finding" data-status="finding">returns a lock whose TTL ran out' in page,
          "the finding's explanation is written in its cell")
    return page


def in_browser(chrome, out, build_dir):
    page = os.path.join(out, "matrix.html")
    shot = os.path.join(build_dir, "matrix.png")
    r = browser(chrome, page, "--screenshot=" + shot)
    check(r.returncode == 0 and os.path.exists(shot), "chromium took a screenshot", r)
    check(png_size(shot) == (WIDTH, HEIGHT), "the screenshot is the window's size")
    probe = os.path.join(out, "probe.html")
    with open(probe, "w") as f:
        f.write(open(page).read().replace("</body>", PROBE + "</body>"))
    r = browser(chrome, probe, "--dump-dom")
    found = re.search(r'data-probe="([^"]*)"', r.stdout)
    check(found is not None, "the probe ran in the browser", r)
    seen = json.loads(html.unescape(found.group(1)))
    check(seen["grid_on_screen"], "the grid starts on the first screen: %r" % seen)
    check(seen["finding_why"].startswith("returns a lock whose TTL ran out") and
          seen["finding_on_screen"], "a finding's explanation is on the first screen: %r" % seen)
    check(seen["page_width"] <= seen["inner_width"], "the page fits the window's width: %r" % seen)
    check(seen["expected_hidden"] and seen["others_shown"],
          "unticking 'as expected' hides those marks only: %r" % seen)
    return shot


def main(binary, build_dir):
    chrome, node = chromium(), have_node()
    if not node:
        print("skipped: the documented finding needs Node and services/ext/node/node_modules "
              "(scripts/setup.sh installs them)")
        return 77
    with tempfile.TemporaryDirectory(prefix="lockstep-matrix-report-") as out:
        r = subprocess.run(
            [binary, "matrix", "--adapter", "memory", "--adapter", "ext:node-redlock",
             "--scenario", "sequential", "--scenario", "gc-pause", "--scenario", "slow-acquire",
             "--scenario", "clock-jump", "--fencing", "both", "--report", out],
            capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, "every cell as expected or a documented finding (exit 0)", r)
        files(out)
        if chrome is None:
            print("skipped: no chromium to look at matrix.html in (apt-get install chromium)")
            return 77
        shot = in_browser(chrome, out, build_dir)
    print("matrix.md and matrix.html as a team reads them; screenshot: " + shot)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: matrix_report_test.py LOCKSTEP_BINARY OUT_DIR")
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))
