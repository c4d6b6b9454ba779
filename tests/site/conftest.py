"""Fixtures of the site tests: the built HTML, its pages in toc order, a local server, Chromium.

These tests look at the *built* site, so they run after the book build (`make site-test`, part
of `make test`); `make test` sets BOOK_SITE_REQUIRED=1, and then a missing build fails instead
of skipping.  BOOK_HTML and BOOK_TOC point them at a private build (default: _build/html and
_toc.yml).  The browser tests need Chromium at /usr/bin/chromium (CHROMIUM to override): where
it is absent they are skipped, and the run (or `make test` at its end) says so once with the
apt-get line (tests/_system.py); .ci/run installs it and makes them required.
"""

import functools
import http.server
import os
import shutil
import threading

import pytest

import _system
from _site import CHROMIUM, CHROMIUM_ARGS, HTML, REQUIRED


@pytest.fixture(scope="session")
def html_dir():
    if not (HTML / "index.html").exists():
        msg = f"no built site at {HTML}: run the book build first (make build-strict)"
        if REQUIRED:
            pytest.fail(msg)
        pytest.skip(msg)
    return HTML


@pytest.fixture(scope="session")
def server(html_dir):
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        # skipped with a tagged reason (failed under CI, BOOK_SYSTEM_REQUIRED=1); the run, or
        # make test at its end, says once which checks were skipped (tests/_system.py)
        _system.require("chromium", f"CHROMIUM NOT FOUND AT {CHROMIUM}: THE BROWSER TESTS OF THE SITE DID NOT RUN")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # playwright gives the browser a fresh temporary --user-data-dir; each test page gets
        # its own incognito context (no state shared between pages)
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def screenshots(html_dir):
    out = html_dir.parent / "screenshots"
    out.mkdir(exist_ok=True)
    return out
