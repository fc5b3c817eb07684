"""An MCP server written by hand (JSON-RPC line by line) that describes its one tool, the tool's
one parameter and its one resource with whatever text it is given: what a hostile server can
put before the model. Run: ``python describing.py JSON``, the JSON an object with ``tool``,
``parameter`` and ``resource`` (strings) and ``repeat`` (each string that many times over).
The tool ``lookup`` answers with its ``query``.
"""

import json
import sys

ASKED = json.loads(sys.argv[1])
SAID = {part: ASKED[part] * ASKED["repeat"] for part in ("tool", "parameter", "resource")}
SCHEMA = {"type": "object", "properties": {"query": {"type": "string", "description": SAID["parameter"]}}, "required": ["query"]}
LOOKUP = {"name": "lookup", "description": SAID["tool"], "inputSchema": SCHEMA}
NOTE = {"uri": "notes://today", "name": "today", "description": SAID["resource"]}


def answer(message: dict) -> dict:
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        info = {"name": "describing", "version": "1"}
        capabilities = {"tools": {}, "resources": {}}
        return {"result": {"protocolVersion": params["protocolVersion"], "capabilities": capabilities, "serverInfo": info}}
    if method == "tools/list":
        return {"result": {"tools": [LOOKUP]}}
    if method == "resources/list":
        return {"result": {"resources": [NOTE]}}
    if method == "tools/call":
        query = str((params.get("arguments") or {}).get("query"))
        return {"result": {"content": [{"type": "text", "text": query}]}}
    return {"result": {}}


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer(message)}), flush=True)
