"""How long a rendered report page is, measured in a real browser: "screens" = the document's
height / the viewport's height at a 1024 x 768 viewport, plus the page's console errors and
broken images. Issue 49 bounds page 07 at 15 screens and the index at 10.

It drives a headless Chromium (Debian's ``/usr/bin/chromium``; never a downloaded browser) over
the DevTools protocol on ``--remote-debugging-pipe``, so it needs nothing beyond the standard
library. The main job and CI have no Chromium: :func:`find_chromium` returns ``None`` there and
the tests that use this module skip with that reason.

Usage::

    pfntheory screens reports/07_cpu_scale.html reports/index.html
    pfntheory screens --width 1440 --json reports/*.html
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PageMeasure", "find_chromium", "measure_pages"]

# Flags the machine notes require for a headless Chromium on a closed network (without the
# background-networking ones it keeps trying to reach Google's hosts).
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--hide-scrollbars",
)

# A page's images: broken if it finished loading with no pixels. Height: the larger of the
# document's and the body's scroll height (either may be the taller with margins).
_PROBE_JS = """(() => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter(i => i.complete && i.naturalWidth === 0)
                     .map(i => i.getAttribute('src'));
  const pending = imgs.filter(i => !i.complete).length;
  const body = document.body ? document.body.scrollHeight : 0;
  const h = Math.max(document.documentElement.scrollHeight, body);
  return JSON.stringify({height: h, images: imgs.length, broken: broken, pending: pending,
                         title: document.title});
})()"""


@dataclass
class PageMeasure:
    """One page measured at ``width`` x ``height`` CSS pixels."""

    path: str
    width: int
    height: int
    document_height: int
    screens: float
    images: int
    broken_images: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    title: str = ""


def find_chromium() -> str | None:
    """The Chromium binary to use: ``$PFNTHEORY_CHROMIUM``, else ``chromium`` on PATH (Debian's
    ``/usr/bin/chromium``); ``None`` when there is none (CI, the main job)."""
    env = os.environ.get("PFNTHEORY_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Pipe:
    """The DevTools protocol over Chromium's pipe: JSON messages, each ended by a NUL byte;
    Chromium reads fd 3 and writes fd 4 of its own process."""

    def __init__(self, binary: str, user_dir: str):
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()

        def _fds():  # in the child, before exec: its fd 3 reads our messages, its fd 4 answers
            # copy both above 10 first, so neither dup2 can overwrite the other's source
            a = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)  # os.dup2 leaves the copy inheritable across exec
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, *_FLAGS, f"--user-data-dir={user_dir}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,  # pass_fds would close fds 3 and 4 after preexec_fn ran
            preexec_fn=_fds,
        )
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer over the DevTools pipe in time")
            chunk = os.read(self._from_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe (did it start?)")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params=None, session: str | None = None, timeout=60.0) -> dict:
        self._id += 1
        msg: dict = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"DevTools {method} failed: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str, timeout=60.0) -> dict:
        deadline = time.monotonic() + timeout
        for i, m in enumerate(self.events):
            if m.get("method") == method and m.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            self.events.append(m)

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)


def _errors_from(events: list[dict], session: str) -> list[str]:
    out = []
    for m in events:
        if m.get("sessionId") != session:
            continue
        p = m.get("params", {})
        if m.get("method") == "Runtime.consoleAPICalled" and p.get("type") == "error":
            out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
        elif m.get("method") == "Runtime.exceptionThrown":
            out.append(p.get("exceptionDetails", {}).get("text", "exception"))
        elif m.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            out.append(f"{e.get('text', '')} {e.get('url', '')}".strip())
    return out


def _measure_one(pipe: _Pipe, path: Path, width: int, height: int) -> PageMeasure:
    target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    sess = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        pipe.call(f"{domain}.enable", session=sess)
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        session=sess,
    )
    pipe.events.clear()
    pipe.call("Page.navigate", {"url": path.resolve().as_uri()}, session=sess)
    pipe.wait_event("Page.loadEventFired", sess)
    res = pipe.call(
        "Runtime.evaluate", {"expression": _PROBE_JS, "returnByValue": True}, session=sess
    )
    probe = json.loads(res["result"]["value"])
    errors = _errors_from(pipe.events, sess)
    pipe.call("Target.closeTarget", {"targetId": target})
    h = int(probe["height"])
    return PageMeasure(
        path=str(path),
        width=width,
        height=height,
        document_height=h,
        screens=round(h / height, 2),
        images=int(probe["images"]),
        broken_images=list(probe["broken"]),
        console_errors=errors,
        title=str(probe["title"]),
    )


def measure_pages(
    paths, width: int = 1024, height: int = 768, chromium: str | None = None
) -> list[PageMeasure]:
    """Measure each HTML file in ``paths`` (loaded as a file:// URL) in one headless Chromium."""
    if not isinstance(width, int) or not isinstance(height, int) or width < 200 or height < 200:
        raise ValueError(f"width and height must be integers >= 200 (CSS px), got {width}x{height}")
    paths = [Path(p) for p in paths]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"paths: no such page(s): {', '.join(missing)}")
    binary = chromium or find_chromium()
    if binary is None:
        raise FileNotFoundError(
            "no Chromium found (install Debian's chromium or set PFNTHEORY_CHROMIUM)"
        )
    with tempfile.TemporaryDirectory(prefix="pfntheory-chromium-") as user_dir:
        pipe = _Pipe(binary, user_dir)
        try:
            return [_measure_one(pipe, p, width, height) for p in paths]
        finally:
            pipe.close()
