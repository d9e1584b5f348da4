"""Render a bigbn report in headless Chromium, check its console, save a screenshot.

    python scripts/screenshot_report.py WORKDIR --out docs/report.png
    python scripts/screenshot_report.py report.html --out shot.png --height 2400

WORKDIR (a finished run: its report is written to a temporary file first, `bigbn
report`) or an .html file is opened offline (every host name resolves to nothing, so a
page that needed the network would show it) in Debian's `chromium` (or
chromium-browser / google-chrome) with its console logged to stderr. Any console
message (a script error, a console.error) is printed and the exit status is 1, as it is
for any src / href of the page that points outside it (Chromium does not log a failed
image or style sheet, so the page's references are checked directly).
The screenshot is the top --width × --height pixels of the page; with --max-kb it is
scaled down (Pillow, as matplotlib installs it) until the PNG fits.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str | None:
    """The first headless-capable Chromium on PATH, or None."""
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def render(page: Path, png: Path, width: int, height: int, exe: str | None = None) -> list[str]:
    """Screenshot ``page`` (an HTML file) into ``png``; returns the console's messages."""
    exe = exe or browser()
    if exe is None:
        raise SystemExit("no Chromium found (apt-get install -y chromium)")
    cmd = [exe, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: nothing outside the file loads
           f"--window-size={width},{height}", f"--screenshot={png}",
           "--enable-logging=stderr", "--v=0", page.resolve().as_uri()]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    with tempfile.TemporaryDirectory(prefix="bigbn-chromium-") as profile:
        proc = subprocess.run(cmd + [f"--user-data-dir={profile}"], capture_output=True, text=True,
                              timeout=120)
    if proc.returncode != 0 or not png.is_file():
        raise SystemExit(f"chromium failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return console_messages(proc.stderr)


def outside_references(text: str) -> list[str]:
    """Every src / href of an HTML page that is neither inline data nor a #fragment."""
    from html.parser import HTMLParser

    found = []

    class Refs(HTMLParser):
        def handle_starttag(self, tag, attrs):
            for k, v in attrs:
                if k in ("src", "href") and v is not None and not v.startswith(("data:", "#")):
                    found.append(f"<{tag} {k}={v}>")

    Refs().feed(text)
    return found


def console_messages(stderr: str) -> list[str]:
    """The page's console lines in Chromium's log (script errors, failed resources)."""
    return [line for line in stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]


def shrink(png: Path, max_bytes: int) -> None:
    """Scale the PNG down by steps of 0.85 (and quantise it) until it fits ``max_bytes``."""
    from PIL import Image

    img = Image.open(png).convert("RGB")
    scale = 1.0
    while True:
        w, h = int(img.width * scale), int(img.height * scale)
        out = img.resize((w, h), Image.LANCZOS).quantize(colors=256, method=Image.Quantize.MEDIANCUT)
        buf = io.BytesIO()
        out.save(buf, format="PNG", optimize=True)
        if buf.tell() <= max_bytes or scale < 0.2:
            png.write_bytes(buf.getvalue())
            return
        scale *= 0.85


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="a finished run's work directory, or a report's .html file")
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--width", type=int, default=1100)
    ap.add_argument("--height", type=int, default=2600)
    ap.add_argument("--threshold", type=float, default=0.5, help="the report's graph threshold")
    ap.add_argument("--max-kb", type=int, default=None, help="scale the PNG down until it fits")
    a = ap.parse_args(argv)
    src, out = Path(a.source), Path(a.out)
    with tempfile.TemporaryDirectory(prefix="bigbn-report-") as tmp:
        if src.is_dir():
            from bigbn.outputs.report import write_report

            page = write_report(src, Path(tmp) / "report.html", threshold=a.threshold)
        else:
            page = src
        messages = render(page, out, a.width, a.height)
        messages += [f"a reference outside the page: {r}"
                     for r in outside_references(Path(page).read_text(encoding="utf-8"))]
    if a.max_kb:
        shrink(out, a.max_kb * 1024)
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
    for line in messages:
        print(f"console: {line}", file=sys.stderr)
    if messages:
        print(f"{len(messages)} console message(s): the page does not render cleanly", file=sys.stderr)
        return 1
    print("console: no messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
