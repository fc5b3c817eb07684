"""An MCP server written by hand, line by line of JSON-RPC, so it can answer what no SDK
would send. Its one tool, ``reflect``, answers each call with the caller's ``reply``
argument as it is: ``{"result": {...}}`` or ``{"error": {...}}`` (any JSON objects: an answer
that is not a JSON-RPC response is never matched to its call, which then waits for its timeout;
without ``reply``, a short text). Its input
schema is ``{"type": "object"}``, or the JSON of the first argument, whatever that holds.
A ``resources/read`` is never answered. Run: ``python raw.py [SCHEMA]``.
"""

import json
import os
import sys

SCHEMA = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {"type": "object"}
REFLECT = {"name": "reflect", "description": "Answers with the JSON-RPC reply it is given.", "inputSchema": SCHEMA}
PID = {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}}


def answer(message: dict) -> dict:
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        info = {"name": "raw", "version": "1"}
        return {"result": {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}}
    if method == "tools/list":
        return {"result": {"tools": [REFLECT, PID]}}
    if method == "tools/call" and params.get("name") == "pid":
        return {"result": {"content": [{"type": "text", "text": str(os.getpid())}]}}
    if method == "tools/call":
        reply = (params.get("arguments") or {}).get("reply")
        if not isinstance(reply, dict) or not ("result" in reply or "error" in reply):
            return {"result": {"content": [{"type": "text", "text": "no reply given"}]}}
        return reply
    return {"result": {}}


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and message["method"] != "resources/read":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer(message)}), flush=True)
