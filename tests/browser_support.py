"""A real JupyterLab server and a real headless Chromium for the browser tests.

Chromium is Debian's (`make browser-deps`, part of `make test`, installs the `chromium` package);
Playwright's Python package drives it through `executable_path`, since Playwright cannot download
its own browser here.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from d2lite.unattended import HEADLESS_ENV

CHROMIUM_ARGS = [
    # As root in a container Chromium's own sandbox cannot start; the page is our own localhost lab.
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    # The machine has no internet: stop Chromium's background connections and update checks.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]


def chromium_executable() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def launched_chromium():
    """Yield a headless Debian Chromium driven by Playwright, closed afterwards (a pytest fixture body);
    skips, with the install line, when it is missing or cannot start (``required_in_ci`` turns that
    skip into a failure in CI)."""
    import pytest

    executable = chromium_executable()
    if executable is None:
        pytest.skip("Debian's chromium is not installed: `make browser-deps` (part of `make test`) installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except Exception as error:  # Chromium cannot start on this machine (a failure in CI)
            pytest.skip(f"Chromium at {executable} cannot start here: {error}")
        yield chromium
        chromium.close()


@dataclass
class LabServer:
    url: str
    token: str
    log: Path

    def page_url(self, path: str) -> str:
        """The notebook at ``path`` in a new, empty workspace (no tabs restored from earlier pages)."""
        workspace = secrets.token_hex(4)
        return f"{self.url}/lab/workspaces/{workspace}/tree/{path}?reset&token={self.token}"


SERVING_AT = re.compile(r"http://127\.0\.0\.1:(\d+)/")  # the address jupyter_server logs once it listens


@contextlib.contextmanager
def running_lab(argv: list[str], root: Path, log: Path, env: dict[str, str] | None = None):
    """Start JupyterLab from ``argv`` (without --port/--token), token-protected on 127.0.0.1. The server takes
    its own port (``--port=0``: the system gives it a free one; no retry on another) and the test reads it
    from the server's log."""
    token = secrets.token_hex(16)
    argv = argv + ["--port=0", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"]
    with open(log, "w") as log_file:
        server = subprocess.Popen(argv, cwd=root, stdout=log_file, stderr=subprocess.STDOUT, env=env)
        try:
            deadline, url = time.monotonic() + 600, None
            while True:
                if url is None and (found := SERVING_AT.search(log.read_text(errors="replace"))):
                    url = f"http://127.0.0.1:{found.group(1)}"
                try:
                    if url is not None:
                        urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                        break
                except OSError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start; see {log}:\n{log.read_text()[-2000:]}")
                time.sleep(0.5)
            yield LabServer(url=url, token=token, log=log)
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


def student_environment() -> dict[str, str]:
    """The environment of a student's laptop: no CI or grading variables."""
    env = dict(os.environ)
    for name in (*HEADLESS_ENV, "D2LITE_DATASET"):
        env.pop(name, None)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


# Click every link whose protocol is not a plain one (javascript:, data:, ...): a payload in a link runs.
CLICK_LINKS = """() => { for (const a of document.querySelectorAll('a[href]')) {
    if (!['http:', 'https:', 'mailto:', 'file:'].includes(a.protocol)) a.click(); } }"""
SETTLE = "() => new Promise(done => setTimeout(done, 500))"  # let queued javascript: navigations run


def opened_offline(browser, path: Path):
    """A Chromium page showing ``path``, its links clicked; only file: requests are served."""
    page = browser.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
               else route.abort())
    page.goto(path.as_uri(), wait_until="load")
    page.evaluate(CLICK_LINKS)
    page.evaluate(SETTLE)
    return page


def payloads_ran(page) -> set[str]:
    """The names of the payloads that ran in ``page`` (each pushes its name onto ``window.__pwned``)."""
    return set(page.evaluate("() => window.__pwned || []"))
