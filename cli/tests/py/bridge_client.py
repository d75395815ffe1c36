"""A real MCP client for the pi tool bridge tests (cli/tests/suite/bridge.rs): the official MCP
Python SDK (`mcp` 2.x, Streamable HTTP). Prints one JSON object per line on stdout.

    bridge_client.py session URL    list tools; call pi__sem_reindex; call an unknown name; call
                                    pi__slow_tool and cancel it when a line arrives on stdin;
                                    call pi__slow_tool again and report how it ends (disposed)
    bridge_client.py deadline URL   call pi__slow_tool and report the MCP error (the deadline)
    bridge_client.py load           stdin: {"urls": [...], "calls_per_run": N}; N concurrent
                                    pi__sem_reindex calls per URL, each on its own session per URL
    bridge_client.py origin URL ORIGIN
                                    initialize as a browser page of ORIGIN would (an `Origin`
                                    header) and report how it ended
    bridge_client.py survive URL    initialize and list tools, say `ready`, wait for a line on
                                    stdin (the test floods the endpoint meanwhile), then call
                                    pi__sem_reindex on the same session
"""

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp import MCPError
from mcp.shared._httpx_utils import create_mcp_http_client


def say(obj):
    print(json.dumps(obj), flush=True)


def result_json(result):
    return {
        "isError": bool(result.is_error),
        "content": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content],
    }


async def session_mode(url):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            say({"step": "tools", "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools.tools]})
            result = await session.call_tool("pi__sem_reindex", {"path": "src"})
            say({"step": "call", **result_json(result)})
            result = await session.call_tool("pi__nope", {})
            say({"step": "unknown", **result_json(result)})

            async with anyio.create_task_group() as tg:
                outcome = {}

                async def slow():
                    try:
                        outcome["result"] = result_json(await session.call_tool("pi__slow_tool", {}))
                    except MCPError as e:
                        outcome["error"] = str(e)

                tg.start_soon(slow)
                # The test writes a line once pi's side has seen the call: cancel it then.
                await anyio.to_thread.run_sync(sys.stdin.readline)
                tg.cancel_scope.cancel()
            say({"step": "cancelled", **outcome})

            # A call still pending when the endpoint is disposed (the test closes its stdin).
            try:
                result = await session.call_tool("pi__slow_tool", {})
                say({"step": "disposed", **result_json(result)})
            except Exception as e:  # an MCP error, or the closed transport
                say({"step": "disposed", "error": f"{type(e).__name__}: {e}"})


async def deadline_mode(url):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("pi__sem_reindex", {"path": "SECRET-ARG-VALUE"})
            say({"step": "call", **result_json(result)})
            try:
                result = await session.call_tool("pi__slow_tool", {})
                say({"step": "deadline", **result_json(result)})
            except MCPError as e:
                say({"step": "deadline", "error": str(e)})


async def load_mode():
    job = json.loads(sys.stdin.read())
    results = []

    async def one_run(i, url):
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def one_call(k):
                    try:
                        r = await session.call_tool("pi__sem_reindex", {"run": i, "k": k})
                        results.append({"run": i, "k": k, **result_json(r)})
                    except MCPError as e:
                        results.append({"run": i, "k": k, "error": str(e)})

                async with anyio.create_task_group() as tg:
                    for k in range(job["calls_per_run"]):
                        tg.start_soon(one_call, k)

    async with anyio.create_task_group() as tg:
        for i, url in enumerate(job["urls"]):
            tg.start_soon(one_run, i, url)
    say({"step": "load", "results": results})


async def origin_mode(url, origin):
    client = create_mcp_http_client(headers={"Origin": origin})
    try:
        async with client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    say({"step": "origin", "initialized": True})
    except Exception as e:  # the MCP error the server's refusal became (inside task groups)
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        say({"step": "origin", "error": f"{type(e).__name__}: {e}"})


async def survive_mode(url):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            say({"step": "ready"})
            await anyio.to_thread.run_sync(sys.stdin.readline)
            result = await session.call_tool("pi__sem_reindex", {"path": "after-flood"})
            say({"step": "call", **result_json(result)})


def main():
    mode = sys.argv[1]
    if mode == "session":
        anyio.run(session_mode, sys.argv[2])
    elif mode == "deadline":
        anyio.run(deadline_mode, sys.argv[2])
    elif mode == "load":
        anyio.run(load_mode)
    elif mode == "origin":
        anyio.run(origin_mode, sys.argv[2], sys.argv[3])
    elif mode == "survive":
        anyio.run(survive_mode, sys.argv[2])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
