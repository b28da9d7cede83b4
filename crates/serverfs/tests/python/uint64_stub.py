"""A stdio MCP server whose one tool, `probe`, publishes the schema
constructs clients warned about in ServerFS's schemas before issue 17: an
integer with `format: "uint64"` and a nullable `type` array. The client
suite (clients_e2e.rs) serves it to each client first, to show that the
output it checks for schema warnings does carry them; ServerFS's must then
carry none.

Usage: uint64_stub.py  (speaks JSON-RPC lines on stdin/stdout; standard
library only)
"""

import json
import sys

COUNT = {"type": "integer", "format": "uint64", "minimum": 0}
NULLABLE = {"type": ["string", "null"]}
TOOL = {
    "name": "probe",
    "description": "Returns the count it is given.",
    "inputSchema": {"type": "object", "properties": {"n": COUNT, "note": NULLABLE}},
    "outputSchema": {
        "type": "object",
        "properties": {"n": COUNT, "note": NULLABLE},
        "required": ["n"],
    },
}


def result(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "uint64-stub", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        n = params.get("arguments", {}).get("n", 1)
        return {
            "content": [{"type": "text", "text": json.dumps({"n": n})}],
            "structuredContent": {"n": n, "note": None},
            "isError": False,
        }
    if method == "ping":
        return {}
    return None


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # notifications need no answer
    answer = result(message.get("method"), message.get("params") or {})
    if answer is None:
        reply = {"error": {"code": -32601, "message": "method not found"}}
    else:
        reply = {"result": answer}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}), flush=True)
