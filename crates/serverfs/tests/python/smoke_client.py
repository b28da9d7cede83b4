"""Independent client check: the official Python MCP SDK talks to ServerFS
over Streamable HTTP, lists the tools and reads a file.

Usage: smoke_client.py URL TOKEN WORKDIR PATH  (prints the file's content)
"""

import asyncio
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, token: str, workdir: str, path: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                names = [tool.name for tool in tools.tools]
                if "read_text_file" not in names:
                    raise SystemExit(f"read_text_file missing from {names}")
                result = await session.call_tool(
                    "read_text_file", {"workdir": workdir, "path": path}
                )
                if result.is_error:
                    raise SystemExit(f"read_text_file failed: {result.content}")
                sys.stdout.write(result.structured_content["content"])


asyncio.run(main(*sys.argv[1:5]))
