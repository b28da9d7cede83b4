"""A content-only MCP client (issue 17): the official Python SDK connects to
ServerFS, and a scripted model that sees nothing but each result's `content`
text -- never `structuredContent` -- reads a page, follows the `next_cursor`
it read, searches, and edits with the `revision` it read.

Usage:
  content_client.py stdio BINARY WORKDIR_SPEC
  content_client.py http URL TOKEN

Prints one JSON object: the calls the model made and the text it was given
for each. Exits non-zero (with the reason) when the model cannot find what
it needs in the text.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def header_and_body(text: str) -> tuple[dict, str]:
    """ServerFS's text block: a JSON header line, then the body."""
    first, _, body = text.partition("\n")
    return json.loads(first), body


class ScriptedModel:
    """Decides each call from the texts of the results so far, as a model
    reading them would."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def next_call(self) -> tuple[str, dict] | None:
        step = len(self.seen)
        if step == 0:
            return "read_text_file", {"workdir": "demo", "path": "notes.txt", "max_lines": 10}
        first, first_body = header_and_body(self.seen[0])
        if "note 10 of the notes" not in first_body:
            raise SystemExit(f"the first page's lines are not in its text: {self.seen[0]!r}")
        if step == 1:
            return "read_text_file", {
                "workdir": "demo",
                "path": "notes.txt",
                "max_lines": 10,
                "cursor": first["next_cursor"],
            }
        if step == 2:
            _, second_body = header_and_body(self.seen[1])
            if not second_body.startswith("note 11 of the notes"):
                raise SystemExit(f"next_cursor did not continue the file: {self.seen[1]!r}")
            return "search_text", {"workdir": "demo", "query": "needle"}
        if step == 3:
            _, matches = header_and_body(self.seen[2])
            hits = [line for line in matches.splitlines() if line.startswith("src/lib.rs:")]
            if not hits:
                raise SystemExit(f"no path:line:text match in the search text: {self.seen[2]!r}")
            return "edit_text_file", {
                "workdir": "demo",
                "path": "notes.txt",
                "expected_revision": first["revision"],
                "edits": [{"old_text": "note 12 of", "new_text": "NOTE TWELVE of"}],
            }
        return None


async def drive(session: ClientSession) -> list[dict]:
    await session.initialize()
    model = ScriptedModel()
    transcript = []
    while (call := model.next_call()) is not None:
        name, arguments = call
        result = await session.call_tool(name, arguments)
        # Only `content` reaches the model, as in content-only clients.
        text = "\n".join(block.text for block in result.content if block.type == "text")
        if result.is_error:
            raise SystemExit(f"{name} failed: {text}")
        model.seen.append(text)
        transcript.append({"tool": name, "arguments": arguments, "text": text})
    return transcript


async def main(argv: list[str]) -> None:
    if argv[0] == "stdio":
        binary, spec = argv[1], argv[2]
        params = StdioServerParameters(command=binary, args=["serve", "--workdir", spec])
        # The server's own log lines stay out of this client's stderr, which
        # the test reads for the client's complaints.
        with open(os.devnull, "w") as server_log:
            async with stdio_client(params, errlog=server_log) as (read, write):
                async with ClientSession(read, write) as session:
                    transcript = await drive(session)
    elif argv[0] == "http":
        url, token = argv[1], argv[2]
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    transcript = await drive(session)
    else:
        raise SystemExit(f"unknown transport {argv[0]!r}")
    print(json.dumps({"calls": transcript}))


asyncio.run(main(sys.argv[1:]))
