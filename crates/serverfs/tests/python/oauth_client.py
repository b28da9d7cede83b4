"""OAuth end to end with the official Python MCP SDK and a real browser.

The SDK's OAuthClientProvider discovers the protected resource and the
authorization server, registers itself (RFC 7591), and opens the
authorization URL; headless Chromium, driven over the Chrome DevTools
Protocol on a pipe, shows the consent page, types the ownership proof,
takes a screenshot and approves; the browser lands on this script's
loopback callback (and then shows that a page of another origin cannot
frame the consent page), and the SDK exchanges the code and calls tools. Then a
refresh, and a revocation through `serverfs oauth revoke`, after which
both the access token and the refresh token must be refused at once.

Usage: oauth_client.py URL PROOF WORKDIR SCREENSHOT CHROMIUM SERVERFS STATE_FILE

Prints one JSON object per step on stdout; the Rust test checks them.
Never prints a token.
"""

import asyncio
import base64
import html
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

TIMEOUT = 60


def report(step: str, **fields) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


class Callback:
    """The loopback redirect target (RFC 8252): one GET with the answer."""

    def __init__(self) -> None:
        self.query: dict[str, str] | None = None
        self.received = threading.Event()
        # A page of another origin that frames given URLs (the framing check).
        self.frame_page = b""
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the stdlib's name)
                parsed = urllib.parse.urlparse(self.path)
                if parsed.path == "/frames":
                    self.send_response(200)
                    self.send_header("content-type", "text/html")
                    self.end_headers()
                    self.wfile.write(outer.frame_page)
                    return
                if parsed.path != "/callback":  # e.g. the browser's favicon.ico
                    self.send_response(404)
                    self.end_headers()
                    return
                if not outer.received.is_set():
                    outer.query = dict(urllib.parse.parse_qsl(parsed.query))
                self.send_response(200)
                self.send_header("content-type", "text/plain")
                self.end_headers()
                self.wfile.write(b"You can close this window.\n")
                outer.received.set()

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    def frames_uri(self, *urls: str) -> str:
        """A page framing each of `urls`."""
        frames = "".join(f'<iframe src="{html.escape(url)}"></iframe>' for url in urls)
        self.frame_page = f"<!doctype html><html><body>{frames}</body></html>".encode()
        return f"http://127.0.0.1:{self.port}/frames"


class Browser:
    """Headless Chromium spoken to over --remote-debugging-pipe (fd 3 in,
    fd 4 out, NUL-separated JSON): no WebSocket library needed."""

    def __init__(self, chromium: str) -> None:
        to_child_r, self.to_child_w = os.pipe()
        self.from_child_r, from_child_w = os.pipe()
        self.profile = tempfile.TemporaryDirectory()

        def wire_fds():
            # Via high numbers first: either pipe end may itself be 3 or 4.
            read_end, write_end = os.dup(to_child_r) + 100, os.dup(from_child_w) + 100
            os.dup2(to_child_r, read_end)
            os.dup2(from_child_w, write_end)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=900,760",
                f"--user-data-dir={self.profile.name}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # close_fds would close 3 and 4 after wire_fds ran.
            close_fds=False,
            preexec_fn=wire_fds,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.reader = os.fdopen(self.from_child_r, "rb", buffering=0)
        self.next_id = 0
        self.buffer = b""
        self.session = None

    def _read_message(self) -> dict:
        while b"\0" not in self.buffer:
            chunk = self.reader.read(65536)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: bool = True) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_child_w, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read_message()
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def open(self) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        self.call("Page.enable")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, seconds: float = TIMEOUT):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError:
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {expression}")

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except (RuntimeError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.profile.cleanup()


def consent_in_browser(chromium: str, url: str, proof: str, screenshot: str, callback: Callback) -> dict:
    """Shows the consent page, proves ownership, approves; returns what the
    page showed."""
    browser = Browser(chromium)
    try:
        browser.open()
        browser.call("Page.navigate", {"url": url})
        browser.wait_for("document.readyState === 'complete' && !!document.getElementById('approve')")
        shown = browser.evaluate(
            "JSON.stringify({client: document.getElementById('client-name').textContent,"
            " redirect: document.getElementById('redirect-host').textContent,"
            " scopes: [...document.querySelectorAll('#scopes strong')].map(e => e.textContent),"
            " text: document.body.innerText})"
        )
        shown = json.loads(shown)
        browser.evaluate(f"document.getElementById('proof').value = {json.dumps(proof)}; true")
        # The screenshot shows the page as the owner sees it, proof masked.
        image = browser.call("Page.captureScreenshot", {"format": "png"})
        with open(screenshot, "wb") as out:
            out.write(base64.b64decode(image["data"]))
        browser.evaluate("document.getElementById('approve').click(); true")
        if not callback.received.wait(TIMEOUT):
            raise RuntimeError("the browser never reached the callback")
        # Where the browser ended up (not the URL itself: it holds the code).
        shown["landed"] = bool(
            browser.wait_for(f"location.href.startsWith({json.dumps(callback.uri + '?')})")
        )
        shown["framed"] = framed(browser, callback, url)
        return shown
    finally:
        browser.close()


def framed(browser: Browser, callback: Callback, consent_url: str) -> dict:
    """What a page of another origin gets when it frames the consent page,
    and, for comparison, the server's /healthz (which allows framing):
    the URL each frame ended up showing."""
    healthz = consent_url.split("/authorize", 1)[0] + "/healthz"
    browser.call("Page.navigate", {"url": callback.frames_uri(consent_url, healthz)})
    browser.wait_for("document.readyState === 'complete' && document.querySelectorAll('iframe').length === 2")
    deadline = time.monotonic() + TIMEOUT
    while True:
        children = browser.call("Page.getFrameTree")["frameTree"].get("childFrames", [])
        urls = [child["frame"]["url"] for child in children]
        if len(urls) == 2 and "about:blank" not in urls:
            return {"consent": urls[0], "control": urls[1]}
        if time.monotonic() > deadline:
            raise RuntimeError(f"frames never loaded: {urls}")
        time.sleep(0.05)


async def tool_text(session: ClientSession, name: str, arguments: dict) -> dict:
    result = await session.call_tool(name, arguments)
    return {"is_error": result.is_error, "structured": result.structured_content}


async def main(url, proof, workdir, screenshot, chromium, serverfs, state_file) -> None:
    callback = Callback()
    storage = MemoryStorage()
    seen: dict = {}

    async def redirect_handler(authorization_url: str) -> None:
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(authorization_url).query))
        seen["authorize_params"] = sorted(query)
        seen["page"] = await anyio.to_thread.run_sync(
            consent_in_browser, chromium, authorization_url, proof, screenshot, callback
        )

    async def callback_handler() -> AuthorizationCodeResult:
        query = callback.query or {}
        seen["callback_params"] = sorted(query)
        return AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"), iss=query.get("iss"))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="ServerFS OAuth test",
            redirect_uris=[callback.uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=TIMEOUT) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = await session.list_tools()
                read = await tool_text(session, "read_text_file", {"workdir": workdir, "path": "a.txt"})
                write = await tool_text(
                    session, "create_text_file", {"workdir": workdir, "path": "by-oauth.txt", "content": "hi\n"}
                )
                report(
                    "authorized",
                    authorize_params=seen.get("authorize_params"),
                    callback_params=seen.get("callback_params"),
                    page=seen.get("page"),
                    client_registered=storage.client is not None,
                    scope=storage.tokens.scope if storage.tokens else None,
                    tools=len(tools.tools),
                    read=read,
                    write=write,
                )
                # Refresh: the access token is declared expired here, so
                # the provider refreshes before the next request.
                first = storage.tokens
                provider.context.token_expiry_time = time.time() - 1
                again = await tool_text(session, "read_text_file", {"workdir": workdir, "path": "a.txt"})
                second = storage.tokens
                report(
                    "refreshed",
                    access_changed=first.access_token != second.access_token,
                    refresh_changed=first.refresh_token != second.refresh_token,
                    read=again,
                )
    # Revocation by the operator takes effect at once for both tokens.
    listing = subprocess.run(
        [serverfs, "oauth", "list", "--state-file", state_file], capture_output=True, text=True, check=True
    ).stdout
    grant_ids = [line.split("\t")[0] for line in listing.splitlines() if "\tclient " in line]
    subprocess.run(
        [serverfs, "oauth", "revoke", grant_ids[0], "--state-file", state_file], capture_output=True, check=True
    )
    tokens = storage.tokens
    async with httpx2.AsyncClient(timeout=TIMEOUT) as raw:
        mcp_answer = await raw.post(
            url,
            headers={
                "authorization": f"Bearer {tokens.access_token}",
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        )
        origin = url.rsplit("/mcp", 1)[0]
        refresh_answer = await raw.post(
            f"{origin}/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens.refresh_token,
                "client_id": storage.client.client_id,
            },
        )
    report(
        "revoked",
        grants_listed=len(grant_ids),
        mcp_status=mcp_answer.status_code,
        mcp_challenge=mcp_answer.headers.get("www-authenticate", ""),
        refresh_status=refresh_answer.status_code,
        refresh_error=refresh_answer.json().get("error"),
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:8]))
