"""A stand-in for a logged-in `cursor-agent` that calls pi's tools through the pi tool bridge, as
Cursor would (cli/tests/suite/pi_daily.rs; nothing here can run the real one). Run as
`cursor-agent -p … --approve-mcps <prompt>` by `toolstream pi-provider`:

- logs its arguments and `$HOME/.cursor/mcp.json` (the run's MCP configuration) to `$FAKE_LOG`;
- prints a stream-json run: init, the user's prompt, some text (and ends there when the run has
  no bridge);
- with the official MCP Python SDK, calls `pi__<$FAKE_TOOL>` with `$FAKE_ARGS` on the server
  `pi-tools` of that configuration (the bridge) and waits for pi's result;
- prints the `mcpToolCall` Cursor would report for it, a final text quoting the result, and the
  `result` line.

With `$FAKE_CHATTER_LINES` (N) and `$FAKE_CHATTER_GO` (a path), the run goes on producing while
its call waits, as Cursor's parallel work does: once the file `$FAKE_CHATTER_GO` exists (the
client has seen the call), N assistant texts `chatter <i>` of about 1 KiB each are printed, and
after each the count printed so far is written to `$FAKE_CHATTER_GO.written` (a print blocks when
toolstream holds the run back).

With `$FAKE_TRACE` (a path), each step it reaches is appended there with the time, for a test's
failure message.

With `$FAKE_CALL_BEFORE_INIT`, the call reaches the bridge before the run's first line does (as it
may when toolstream is slow to read its input): it is sent first, and the run's lines are printed
once the bridge's debug file (`$PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE`) says it queued the call.
"""

import json
import os
import sys
import threading
import time

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

SESSION = "7d3c1f0e-5b2a-4c8e-9f11-bridge000001"


def emit(obj):
    print(json.dumps(obj), flush=True)


def trail(step):
    path = os.environ.get("FAKE_TRACE")
    if path:
        with open(path, "a") as f:
            f.write(f"{time.time():.3f} {step}\n")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call_bridge(url, tool, args):
    trail("connecting to the bridge")
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            trail("initialized")
            listed = await session.list_tools()
            trail("listed")
            result = await session.call_tool(tool, args)
            trail("call answered")
            return [t.name for t in listed.tools], result


def chatter(lines, go):
    """Assistant texts printed while the bridged call waits (see the module's doc)."""
    deadline = time.monotonic() + 60
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)
    trail("chatter begins")
    pad = " ".join(["words the run goes on writing while its client runs a tool"] * 16)
    for i in range(lines):
        emit({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": f"chatter {i:06d} {pad}\n"}]}, "session_id": SESSION, "timestamp_ms": 1791237648400 + i})
        with open(go + ".written", "w") as f:
            f.write(str(i + 1))


def queued(diag_file):
    """Wait (30 s at most) until the bridge's debug file says it queued a call."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(diag_file) as f:
                if '"request_queued"' in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


def main():
    trail("started")
    log = {"argv": sys.argv[1:]}
    config_path = os.path.join(os.environ.get("HOME", ""), ".cursor", "mcp.json")
    try:
        with open(config_path) as f:
            config = json.load(f)
    except OSError as e:
        config = {"error": str(e)}
    log["mcp_json_servers"] = sorted((config.get("mcpServers") or {}).keys())
    prompt = sys.argv[-1] if len(sys.argv) > 1 else ""
    tool = "pi__" + os.environ["FAKE_TOOL"]
    args = json.loads(os.environ.get("FAKE_ARGS", "{}"))
    url = (config.get("mcpServers") or {}).get("pi-tools", {}).get("url")
    early, answered = None, {}
    if url is not None and os.environ.get("FAKE_CALL_BEFORE_INIT"):
        early = threading.Thread(target=lambda: answered.update(done=anyio.run(call_bridge, url, tool, args)))
        early.start()
        if queued(os.environ["PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE"]):
            trail("call queued before the run's first line")

    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": SESSION, "model": "Auto", "permissionMode": "default"})
    emit({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}, "session_id": SESSION})
    emit({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Let me use the project's own tool."}]}, "session_id": SESSION, "timestamp_ms": 1791237648224})

    if url is None:
        # No bridge for this run (a request without tools, e.g. a client's title request): Cursor
        # just answers.
        emit({"type": "result", "subtype": "success", "is_error": False, "result": "Let me use the project's own tool.", "session_id": SESSION})
        return
    call_id = "call-bridge-1"
    mcp_args = {"name": "pi-tools-" + tool, "args": args, "toolCallId": call_id, "providerIdentifier": "pi-tools", "toolName": tool}
    emit({"type": "tool_call", "subtype": "started", "call_id": call_id, "tool_call": {"mcpToolCall": {"args": mcp_args}}, "session_id": SESSION, "timestamp_ms": 1791237648300})
    trail("tool call started printed")
    talker = None
    if os.environ.get("FAKE_CHATTER_LINES"):
        talker = threading.Thread(target=chatter, args=(int(os.environ["FAKE_CHATTER_LINES"]), os.environ["FAKE_CHATTER_GO"]))
        talker.start()
    if early is not None:
        early.join()
        names, result = answered["done"]
    else:
        names, result = anyio.run(call_bridge, url, tool, args)
    if talker is not None:
        talker.join()
        trail("chatter done")
    answer = text_of(result)
    log.update({"listed": names, "result_text": answer, "result_is_error": bool(result.is_error)})
    with open(os.environ["FAKE_LOG"], "w") as f:
        json.dump(log, f)
    content = [{"text": {"text": answer}}]
    emit({"type": "tool_call", "subtype": "completed", "call_id": call_id, "tool_call": {"mcpToolCall": {"args": mcp_args, "result": {"success": {"content": content, "isError": bool(result.is_error)}}}}, "session_id": SESSION, "timestamp_ms": 1791237649000})
    final = "The tool said: " + answer
    emit({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": final}]}, "session_id": SESSION, "timestamp_ms": 1791237649100})
    emit({"type": "result", "subtype": "success", "is_error": False, "result": "Let me use the project's own tool." + final, "session_id": SESSION, "usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 0, "cacheWriteTokens": 0}})
    trail("result printed")


if __name__ == "__main__":
    main()
