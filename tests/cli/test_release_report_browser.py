"""report.html in a real browser: headless Chromium (Debian's package) loads it with no request
other than the report file itself, shows the embedded figure, fits a phone's width, and states the
certificate's epsilon.

How requests are caught: the test drives Chromium through the DevTools protocol over a pipe
(``--remote-debugging-pipe``; no Python dependency, no chromedriver) and turns on request
interception for every URL (``Fetch.enable`` with pattern ``*``). Every request the page makes --
images, styles, fonts, scripts, prefetches -- is paused and reported to the test before it could
reach the network; the test lets through only the report's own file:// URL and fails the rest, so a
request is recorded even on a machine without a network. A negative control (the same report with an
external image added and its Content-Security-Policy removed) shows the recorder catches a request.

Chromium: ``apt-get install -y chromium`` (``.ci/run`` does it, and sets PRIVGP_REQUIRE_BROWSER=1 so
that a missing browser fails CI instead of skipping). Elsewhere the test is skipped with that reason.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

from privgp.cli.main import main
from privgp.cli.release_figure import format_upper

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
TIMEOUT = 30.0


def chromium_binary() -> str:
    for cand in (os.environ.get("PRIVGP_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                 "/usr/bin/chromium"):
        if cand and Path(cand).exists():
            return cand
    reason = ("Chromium is not installed (Debian: `apt-get install -y chromium`; .ci/run installs it): the report's "
              "browser test needs a real headless browser")
    if os.environ.get("PRIVGP_REQUIRE_BROWSER"):
        pytest.fail(reason)
    pytest.skip(reason)


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (fd 3: commands in, fd 4: out)."""

    def __init__(self, binary: str, profile: Path):
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def child_fds():  # the protocol's fixed descriptors, inherited across exec
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
                                      "about:blank"], preexec_fn=child_fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.requests: list[str] = []   # every URL the page asked for (intercepted)
        self.allow: set[str] = set()
        self.session = None

    def close(self):
        try:
            self.send("Browser.close")
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass

    def send(self, method: str, params: dict | None = None, session: bool = True) -> int:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        return self._id

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out_r], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._out_r, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg = json.loads(raw)
        if msg.get("method") == "Fetch.requestPaused":  # every request of the page passes here
            url = msg["params"]["request"]["url"]
            self.requests.append(url)
            rid = msg["params"]["requestId"]
            if url in self.allow:
                self.send("Fetch.continueRequest", {"requestId": rid})
            else:
                self.send("Fetch.failRequest", {"requestId": rid, "errorReason": "BlockedByClient"})
        elif "method" in msg:
            self.events.append(msg)
        return msg

    def call(self, method: str, params: dict | None = None, session: bool = True) -> dict:
        i = self.send(method, params, session)
        deadline = time.monotonic() + TIMEOUT
        while True:
            msg = self._read(deadline)
            if msg.get("id") == i:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def open_page(self):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for method, params in (("Page.enable", {}), ("Network.enable", {}),
                               ("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})):
            self.call(method, params)

    def load(self, url: str):
        """Navigate and wait for the load event (all subresources settled)."""
        self.allow.add(url)
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + TIMEOUT
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self._read(deadline)

    def js(self, expression: str):
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")


@pytest.fixture
def browser(tmp_path):
    binary = chromium_binary()
    c = Chromium(binary, tmp_path / "profile")
    try:
        c.open_page()
        yield c
    finally:
        c.close()


PAGE_FACTS = """(() => {
  const img = document.getElementById('release-figure');
  const box = img ? img.getBoundingClientRect() : null;
  return {
    images: document.images.length,
    src: img ? img.getAttribute('src') : null,
    complete: img ? img.complete : false,
    natural: img ? [img.naturalWidth, img.naturalHeight] : null,
    rendered: box ? [box.width, box.height] : null,
    scripts: document.scripts.length,
    links: document.querySelectorAll('link').length,
    epsilon_text: document.getElementById('epsilon').textContent,
    epsilon_value: document.getElementById('epsilon').dataset.epsilon,
    badges: Array.from(document.querySelectorAll('header .badge')).map(b => b.textContent),
    page_width: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
  };
})()"""


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_report_loads_offline_with_its_figure_and_the_certified_epsilon(tmp_path, browser, capsys, monkeypatch):
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    out = tmp_path / "rel"
    assert main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--out", str(out), "--grid", "41",
                 "--seed", "11"]) == 0, capsys.readouterr().err
    cert = json.loads((out / "certificate.json").read_text())["certificate"]
    url = (out / "report.html").resolve().as_uri()

    browser.load(url)
    facts = browser.js(PAGE_FACTS)
    # no request but the report itself (the figure is a data: URI, which is not a request)
    assert browser.requests == [url]
    assert facts["scripts"] == 0 and facts["links"] == 0
    # the figure: a data: URI that decodes to a PNG the browser decoded and laid out at non-zero size
    assert facts["images"] == 1 and facts["src"].startswith("data:image/png;base64,")
    png = base64.b64decode(facts["src"].split(",", 1)[1], validate=True)
    w, h = png_size(png)
    assert 600 <= w <= 2000 and 300 <= h <= 2000 and 20_000 < len(png) < 2_000_000
    assert facts["complete"] and facts["natural"] == [w, h]
    assert facts["rendered"][0] > 300 and facts["rendered"][1] > 150
    assert png == (out / "excursion.png").read_bytes()
    # the stated epsilon is the certificate's (shown rounded up, recorded exactly)
    assert facts["epsilon_value"] == repr(cert["epsilon"]) and float(facts["epsilon_value"]) == cert["epsilon"]
    assert facts["epsilon_text"] == format_upper(cert["epsilon"]) and float(facts["epsilon_text"]) >= cert["epsilon"]
    assert f"\u03b5 = {format_upper(cert['epsilon'])}" in facts["badges"]
    assert f"\u03b4 = {format_upper(cert['delta'])}" in facts["badges"]
    assert facts["page_width"] <= facts["viewport"]

    # a phone: 390 CSS px wide, nothing wider than the screen, the figure still shown
    browser.call("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2,
                                                        "mobile": True})
    phone = browser.js(PAGE_FACTS)
    assert phone["viewport"] == 390 and phone["page_width"] <= 390
    assert 300 < phone["rendered"][0] <= 390 and phone["rendered"][1] > 100
    assert browser.requests == [url]

    # negative control: the recorder sees an external request when the page makes one
    leaky = out.parent / "leaky.html"
    text = (out / "report.html").read_text()
    text = text.replace('<meta http-equiv="Content-Security-Policy"', '<meta name="x-removed-csp"')
    leaky.write_text(text.replace("</main>", '<img src="http://192.0.2.1/pixel.png" alt=""></main>'))
    browser.load(leaky.resolve().as_uri())
    assert "http://192.0.2.1/pixel.png" in browser.requests


MAP_FACTS = """(() => {
  const c = document.getElementById('release-map'), r = c.getBoundingClientRect();
  const g = c.getContext('2d'), px = g.getImageData(0, 0, c.width, c.height).data, colours = new Set();
  for (let k = 0; k < px.length; k += 4 * 97) colours.add(px[k] + ',' + px[k + 1] + ',' + px[k + 2] + ',' + px[k + 3]);
  const o = document.getElementById('map-readout');
  return {ready: c.dataset.ready, scale: Number(c.dataset.scale), view: c.dataset.view, rect: [r.left, r.top, r.width, r.height],
          size: [c.width, c.height], colours: colours.size, opaque: px[3] === 255 && px[px.length - 1] === 255,
          i: o.dataset.i, j: o.dataset.j, value: o.dataset.value, text: o.textContent,
          page_width: document.documentElement.scrollWidth, viewport: window.innerWidth};
})()"""


def _mouse(browser, kind: str, x: float, y: float, **extra):
    browser.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})


def test_the_interactive_map_renders_pans_zooms_and_reads_values_offline(tmp_path, browser, capsys, monkeypatch):
    """privgp release --map: the canvas is drawn by the page's one inline script (allowed by its sha256 in the
    Content-Security-Policy), pointing at it reads the released value of the grid point under the pointer
    (the value in paths.npz), the wheel zooms about the pointer, a drag pans, and nothing is requested. A copy
    whose script differs by one character is refused by the CSP: the map is not drawn."""
    import numpy as np

    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    out = tmp_path / "rel"
    assert main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--out", str(out), "--grid", "41",
                 "--seed", "11", "--map"]) == 0, capsys.readouterr().err
    paths = np.load(out / "paths.npz")["paths"][0]          # (41, 25): x by y
    url = (out / "report.html").resolve().as_uri()
    browser.load(url)
    browser.js("document.getElementById('release-map').scrollIntoView()")
    m = browser.js(MAP_FACTS)
    assert m["ready"] == "true" and m["scale"] == 1
    assert m["rect"][2] > 300 and m["rect"][3] > 150 and m["size"][0] > 300
    assert m["opaque"] and m["colours"] >= 5          # a drawn field, not a blank canvas
    left, top, width, height = m["rect"]

    def read_at(fx, fy):
        _mouse(browser, "mouseMoved", left + fx * width, top + fy * height)
        return browser.js(MAP_FACTS)

    for fx, fy in ((0.5, 0.5), (0.02, 0.97), (0.97, 0.03)):
        r = read_at(fx, fy)
        i, j = int(r["i"]), int(r["j"])
        assert i == min(int(fx * 41), 40) and j == 24 - min(int(fy * 25), 24)   # y grows upwards
        assert float(r["value"]) == float(f"{paths[i, j]:.6g}")
        assert ("above" if paths[i, j] > 0 else "below") in r["text"] and "sale price" in r["text"]
    # zoom about the pointer: the grid point under it stays under it
    before = read_at(0.3, 0.6)
    _mouse(browser, "mouseWheel", left + 0.3 * width, top + 0.6 * height, deltaX=0, deltaY=-120)
    _mouse(browser, "mouseWheel", left + 0.3 * width, top + 0.6 * height, deltaX=0, deltaY=-120)
    zoomed = read_at(0.3, 0.6)
    assert zoomed["scale"] == pytest.approx(1.5625) and (zoomed["i"], zoomed["j"]) == (before["i"], before["j"])
    # drag to the left: the view moves right, and another grid point is under the same pixel
    _mouse(browser, "mousePressed", left + 0.5 * width, top + 0.5 * height, button="left", clickCount=1)
    _mouse(browser, "mouseMoved", left + 0.2 * width, top + 0.5 * height, button="left", buttons=1)
    _mouse(browser, "mouseReleased", left + 0.2 * width, top + 0.5 * height, button="left", clickCount=1)
    dragged = read_at(0.3, 0.6)
    assert dragged["view"] != zoomed["view"] and int(dragged["i"]) > int(zoomed["i"])
    browser.js("document.getElementById('map-reset').click()")
    assert browser.js(MAP_FACTS)["scale"] == 1
    assert m["page_width"] <= m["viewport"]
    assert browser.requests == [url]

    # the CSP allows this script only: one character changed, and it does not run
    text = (out / "report.html").read_text()
    tampered = out.parent / "tampered.html"
    tampered.write_text(text.replace("canvas.dataset.ready = 'true';", "canvas.dataset.ready = 'TRUE';"))
    browser.load(tampered.resolve().as_uri())
    assert browser.js("document.getElementById('release-map').dataset.ready") is None
