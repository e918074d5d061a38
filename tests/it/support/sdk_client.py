"""Drives `system1 mcp` with the official MCP Python SDK client (mcp 2.3.0) over real stdio.

Run by tests/sdk_client.rs with the venv that scripts/test creates. Usage:
    python sdk_client.py <path to system1>
    python sdk_client.py <path to system1> concurrent <N>
The environment (scratch HOME, SYSTEM1_CONFIG selecting the mock, ...) is inherited.

In each connect mode ("auto" probes server/discover and adopts the stateless 2026-07-28 era when the
server offers it, else falls back to initialize; "legacy" goes straight to initialize) it connects, lists the tools, calls each one, and validates every
structuredContent against the tool's outputSchema with jsonschema (a dependency of the SDK).
Prints one JSON summary line on stdout; exits non-zero on the first failure.

With "concurrent N" it instead connects once and sends N system1_decide calls at once (one task
each, as an agent fanning out does), and prints the status of each, or the error the SDK raised.
"""

import json
import os
import sys

import anyio
import jsonschema
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

EXPECTED_TOOLS = ["system1_decide", "system1_health", "system1_capabilities"]


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def session(binary, mode):
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ))
    summary = {"mode": mode}
    async with Client(params, mode=mode) as client:
        summary["protocol"] = client.protocol_version
        info = client.server_info
        check(info is not None and info.name == "system1", f"serverInfo: {info}")
        summary["server"] = f"{info.name} {info.version}"

        listed = await client.list_tools()
        tools = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools}
        check(list(tools) == EXPECTED_TOOLS, f"tools: {list(tools)}")
        for name, tool in tools.items():
            check(tool["inputSchema"].get("type") == "object", f"{name} inputSchema")
            check("outputSchema" in tool, f"{name} has no outputSchema")
            jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])
            jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])

        calls = [
            ("system1_decide", {"question": "Ship it?"}, "decided"),
            ("system1_decide", {"question": "Which?", "options": ["red", "green", "blue"], "request_id": "sdk-1"}, "decided"),
            ("system1_decide", {"question": "Ship it?", "min_confidence": 0.99}, "abstained"),
            ("system1_decide", {"question": "Ship it?", "unknown": True}, "error"),
            ("system1_health", {}, "ok"),
            ("system1_capabilities", {}, None),
        ]
        statuses = []
        for name, args, expected in calls:
            result = await client.call_tool(name, args)
            dumped = result.model_dump(by_alias=True)
            structured = dumped.get("structuredContent")
            check(isinstance(structured, dict), f"{name}: no structuredContent: {dumped}")
            jsonschema.validate(structured, tools[name]["outputSchema"], cls=jsonschema.Draft202012Validator)
            text = [c for c in dumped["content"] if c.get("type") == "text"]
            check(len(text) == 1 and json.loads(text[0]["text"]) == structured, f"{name}: text mirrors structured")
            status = structured.get("status")
            check(expected is None or status == expected, f"{name} {args}: status {status}, expected {expected}")
            check(dumped.get("isError") == (status == "error"), f"{name}: isError {dumped.get('isError')}")
            if name == "system1_decide" and "request_id" in args:
                check(structured["request_id"] == args["request_id"], "request_id echoed")
            if name == "system1_capabilities":
                jsonschema.Draft202012Validator.check_schema(structured["request_schema"])
                jsonschema.Draft202012Validator.check_schema(structured["response_schema"])
                decided = (await client.call_tool("system1_decide", {"question": "q?"})).model_dump(by_alias=True)
                jsonschema.validate(decided["structuredContent"], structured["response_schema"])
            statuses.append(status)
        summary["statuses"] = statuses
    return summary


async def concurrent(binary, n):
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ))
    outcomes = [None] * n
    async with Client(params, mode="legacy") as client:

        async def one(i):
            try:
                result = await client.call_tool("system1_decide", {"question": f"Ship change {i}?"})
                outcomes[i] = result.model_dump(by_alias=True)["structuredContent"]["status"]
            except Exception as e:  # the SDK raises the server's JSON-RPC error: reported, not fatal
                outcomes[i] = f"{type(e).__name__}: {e}"

        async with anyio.create_task_group() as group:
            for i in range(n):
                group.start_soon(one, i)
    return {"statuses": outcomes}


async def main(binary, *rest):
    if rest[:1] == ("concurrent",):
        with anyio.fail_after(60):
            print(json.dumps(await concurrent(binary, int(rest[1]))))
        return
    results = []
    for mode in ("auto", "legacy"):
        with anyio.fail_after(30):
            results.append(await session(binary, mode))
    print(json.dumps(results))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
