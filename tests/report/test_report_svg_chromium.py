"""The SVG flame graph in Debian's headless Chromium: it renders (the screenshot is not
blank), and clicking a frame zooms on it (driven through Chromium's DevTools protocol
with python3-websocket). Chromium is not optional here: scripts/setup installs it, and a
missing one fails the test with what to do.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import struct
import subprocess
import time
import urllib.request
import zlib
from pathlib import Path

import pytest

from pyusttest.report import ok

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--window-size=1200,800"]
WIDTH = 1200  # the SVG's width, in CSS pixels
MARGIN = 10  # the SVG's side margins


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is missing: apt-get install chromium (scripts/setup does)")
    return path


def decode_png(data: bytes):
    """(width, height, channels, rows) of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack_from(">I4s", data, position)
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        position += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (0, 2, 4, 6), header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            if kind == 1:
                row[i] = (row[i] + left) & 0xFF
            elif kind == 2:
                row[i] = (row[i] + up) & 0xFF
            elif kind == 3:
                row[i] = (row[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                corner = previous[i - channels] if i >= channels else 0
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc
                                    else corner)) & 0xFF
        rows.append(bytes(row))
        previous = row
    return width, height, channels, rows


def colour_counts(png: bytes) -> dict:
    """Pixels per distinct colour."""
    _, _, channels, rows = decode_png(png)
    counts = {}
    for row in rows:
        for i in range(0, len(row), channels):
            pixel = row[i:i + channels]
            counts[pixel] = counts.get(pixel, 0) + 1
    return counts


@pytest.fixture(scope="module")
def flame_graph(foo_bar_baz, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("svg") / "flame.svg"
    ok(foo_bar_baz.path, "--format", "svg", "-o", path, "--pid", foo_bar_baz.pid)
    return path


def test_the_flame_graph_renders(flame_graph, tmp_path):
    screenshot = tmp_path / "shot.png"
    result = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                             f"--screenshot={screenshot}", flame_graph.as_uri()],
                            capture_output=True, text=True, timeout=120)
    assert screenshot.is_file(), result.stderr
    counts = colour_counts(screenshot.read_bytes())
    # Background, frames in several hues, text: far more than a blank page's one or two.
    assert len(counts) > 20, f"{len(counts)} colours"
    background = max(counts.values())
    assert background < 0.99 * sum(counts.values())


class DevTools:
    """A page of a headless Chromium, driven through the DevTools protocol."""

    def __init__(self, url: str, profile: Path):
        import websocket  # python3-websocket

        self.process = subprocess.Popen(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
             "--remote-debugging-port=0", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port = self._port(profile / "DevToolsActivePort")
            page = self._page(port)
            self.socket = websocket.create_connection(page["webSocketDebuggerUrl"],
                                                      suppress_origin=True, timeout=30)
        except BaseException:
            self.close()
            raise
        self.ids = itertools.count(1)
        self._wait_for("document.readyState === 'complete'")

    @staticmethod
    def _port(port_file: Path) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if port_file.exists() and port_file.read_text().strip():
                return int(port_file.read_text().split()[0])
            time.sleep(0.05)
        raise AssertionError("Chromium did not open its DevTools port")

    @staticmethod
    def _page(port: int) -> dict:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                pages = [t for t in json.load(r) if t["type"] == "page"]
            if pages:
                return pages[0]
            time.sleep(0.05)
        raise AssertionError("Chromium opened no page")

    def call(self, method: str, **params):
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == number:
                assert "error" not in message, message["error"]
                return message["result"]

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def _wait_for(self, condition: str):
        deadline = time.monotonic() + 30
        while not self.evaluate(condition):
            assert time.monotonic() < deadline, f"timed out waiting for {condition}"
            time.sleep(0.05)

    def click(self, x: float, y: float):
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def close(self):
        if getattr(self, "socket", None):
            self.socket.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def frame_box(page: DevTools, label: str):
    """[x, y, width, height] of the frame labelled label, or None when hidden."""
    return page.evaluate(f"""(function() {{
        var g = [].slice.call(document.querySelectorAll('g.f')).filter(function(g) {{
            return g.getAttribute('data-l') === {json.dumps(label)}; }})[0];
        if (!g || g.getAttribute('display') === 'none') return null;
        var r = g.querySelector('rect').getBoundingClientRect();
        return [r.x, r.y, r.width, r.height]; }})()""")


def test_a_click_zooms_on_a_frame(flame_graph, tmp_path):
    page = DevTools(flame_graph.as_uri(), tmp_path / "p")
    try:
        before = page.screenshot()
        assert page.evaluate("document.getElementById('reset').getAttribute('display')") == "none"
        foo = frame_box(page, "__main__:foo")
        baz = frame_box(page, "__main__:baz")
        assert foo[2] < WIDTH - 2 * MARGIN - 1, "foo already fills the width: nothing to zoom"

        page.click(foo[0] + foo[2] / 2, foo[1] + foo[3] / 2)

        zoomed = frame_box(page, "__main__:foo")
        assert zoomed[0] == pytest.approx(MARGIN, abs=0.5)
        assert zoomed[2] == pytest.approx(WIDTH - 2 * MARGIN, abs=0.5)
        # Its callee grows by the same factor; frames outside foo disappear.
        assert frame_box(page, "__main__:baz")[2] == pytest.approx(
            baz[2] * zoomed[2] / foo[2], rel=1e-3)
        visible = page.evaluate("""[].slice.call(document.querySelectorAll('g.f'))
            .filter(function(g) { return g.getAttribute('display') !== 'none'; })
            .map(function(g) { return g.getAttribute('data-l'); })""")
        assert sorted(label for label in visible if label.startswith("__main__:")) == [
            "__main__:<module>", "__main__:bar", "__main__:baz", "__main__:foo"]
        assert len(visible) == 6, visible  # and the two roots: all, the thread
        assert page.evaluate("document.getElementById('reset').getAttribute('display')") \
            == "inline"
        after = page.screenshot()
        assert colour_counts(after) != colour_counts(before)

        # "Reset zoom" brings the first layout back.
        reset = page.evaluate("""(function() {
            var r = document.getElementById('reset').getBoundingClientRect();
            return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
        page.click(*reset)
        assert frame_box(page, "__main__:foo") == pytest.approx(foo, abs=0.5)
    finally:
        page.close()
