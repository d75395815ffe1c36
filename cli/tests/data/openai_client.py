"""Drives `toolstream serve openai` with the official `openai` Python SDK (cli/tests/suite/openai.rs).

    openai_client.py replay BASE_URL KEY   a recorded exec run: streamed tool loop, non-streamed,
                                           and the bad requests
    openai_client.py live BASE_URL KEY     one plain completion with earlier turns, then one streamed
    openai_client.py tools BASE_URL KEY RUNS
                                           client tools through the bridge: a stand-in cursor-agent
                                           calls them (RUNS: the file it appends a line to per run)
    openai_client.py paused BASE_URL KEY RUNS GO
                                           one client tool call left waiting while the stand-in's run
                                           goes on producing (GO: the file that starts it, see
                                           tests/py/cursor_agent_bridge.py), then answered

Prints one JSON object with what it saw; any failed check raises (non-zero exit).
"""
import json
import re
import sys

import httpx
import openai
from openai import OpenAI

# Canned answers to the recording's tool calls, by tool name.
ANSWERS = {
    "bash": "lib.rs\nmain.rs",
    "read": "fn main() {}\n",
    "grep": "/work/demo/src/main.rs",
    "get_weather": "22°C, partly cloudy",
}

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ANSWERS
]


def read_stream(stream):
    """One streamed response: its text, tool calls (in index order), finish reason and role chunks."""
    content, tool_calls, finish, roles = "", {}, None, 0
    for chunk in stream:
        choice = chunk.choices[0]
        roles += 1 if choice.delta.role == "assistant" else 0
        content += choice.delta.content or ""
        for tc in choice.delta.tool_calls or []:
            entry = tool_calls.setdefault(tc.index, {"id": tc.id, "name": "", "arguments": ""})
            entry["name"] += tc.function.name or ""
            entry["arguments"] += tc.function.arguments or ""
        finish = choice.finish_reason or finish
    return content, [tool_calls[i] for i in sorted(tool_calls)], finish, roles


def streamed_tool_loop(client):
    messages = [{"role": "user", "content": "Look at the project, then tell me the weather in Tokyo."}]
    calls, rounds = [], 0
    while True:
        rounds += 1
        assert rounds <= 10, "too many rounds"
        stream = client.chat.completions.create(model="auto", messages=messages, tools=TOOLS, stream=True)
        content, tool_calls, finish, roles = read_stream(stream)
        assert roles == 1, f"one role chunk per response, got {roles}"
        if finish == "stop":
            assert not tool_calls, tool_calls
            return {"final": content, "calls": calls, "rounds": rounds}
        assert finish == "tool_calls", finish
        assert tool_calls, "finish_reason tool_calls without tool calls"
        messages.append({
            "role": "assistant",
            "content": content or None,
            "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in tool_calls
            ],
        })
        for c in tool_calls:
            json.loads(c["arguments"])  # valid JSON arguments
            calls.append(c["name"])
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": ANSWERS[c["name"]]})


def non_streamed(client):
    first = client.chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "go"}], tools=TOOLS
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls", choice.finish_reason
    call = choice.message.tool_calls[0]
    assert call.function.name == "bash", call
    second = client.chat.completions.create(
        model="auto",
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "lib.rs\nmain.rs"},
        ],
        tools=TOOLS,
    )
    assert second.choices[0].finish_reason == "tool_calls"
    return {"first_tool": call.function.name, "first_args": json.loads(call.function.arguments),
            "second_tool": second.choices[0].message.tool_calls[0].function.name,
            "usage_total": first.usage.total_tokens}


def expect(kind, status, fn):
    try:
        fn()
    except kind as e:
        assert e.status_code == status, (e.status_code, e)
        body = e.body if isinstance(e.body, dict) else {}
        detail = body.get("error", body)
        assert {"message", "type", "code"} <= set(detail), body
        return detail.get("code")
    raise AssertionError(f"expected {kind.__name__}")


def bad_requests(client, base, key):
    out = {}
    out["no_messages"] = expect(openai.BadRequestError, 400,
                                lambda: client.chat.completions.create(model="auto", messages=[]))
    out["unknown_model"] = expect(openai.NotFoundError, 404, lambda: client.chat.completions.create(
        model="no-such-model", messages=[{"role": "user", "content": "x"}]))
    out["unknown_tool_call"] = expect(openai.BadRequestError, 400, lambda: client.chat.completions.create(
        model="auto", messages=[
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [
                {"id": "call_nope", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_nope", "content": "x"}]))
    wrong = OpenAI(base_url=base, api_key="wrong-key", max_retries=0)
    out["wrong_key"] = expect(openai.AuthenticationError, 401, lambda: wrong.models.list())
    # Malformed JSON: the SDK never sends it, so through its HTTP client.
    r = httpx.post(base + "/chat/completions", content=b"{not json",
                   headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    assert r.status_code == 400, r.status_code
    out["malformed_json"] = r.json()["error"]["code"]
    return out


# The client's own tools for the bridge flow; `bash` is named like a pi built-in.
CLIENT_TOOLS = [
    {"type": "function", "function": {"name": "sem_reindex", "description": "Rebuild the semantic index of a folder",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                     "required": ["path"]}}},
    {"type": "function", "function": {"name": "bash", "description": "Run a shell command",
                                      "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}},
]


def client_tool_loop(client, messages, stream):
    """Requests until `stop`, answering each tool call as the client would; what was seen."""
    calls, ids, rounds, final = [], [], 0, None
    while final is None:
        rounds += 1
        assert rounds <= 5, "too many rounds"
        if stream:
            chunks = client.chat.completions.create(model="auto", messages=messages, tools=CLIENT_TOOLS, stream=True)
            content, tool_calls, finish, _ = read_stream(chunks)
        else:
            done = client.chat.completions.create(model="auto", messages=messages, tools=CLIENT_TOOLS)
            choice = done.choices[0]
            content, finish = choice.message.content or "", choice.finish_reason
            tool_calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                          for c in choice.message.tool_calls or []]
        if finish == "stop":
            assert not tool_calls, tool_calls
            final = content
            break
        assert finish == "tool_calls" and len(tool_calls) == 1, (finish, tool_calls)
        call = tool_calls[0]
        args = json.loads(call["arguments"])
        calls.append({"name": call["name"], "args": args})
        ids.append(call["id"])
        messages = messages + [
            {"role": "assistant", "content": content or None, "tool_calls": [
                {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
            {"role": "tool", "tool_call_id": call["id"], "content": f"reindexed {args.get('path')}: 42 files"},
        ]
    return {"calls": calls, "ids": ids, "rounds": rounds, "final": final}


def client_tools(base, key, runs_file):
    def runs():
        try:
            with open(runs_file) as f:
                return len(f.read().splitlines())
        except OSError:
            return 0

    client = OpenAI(base_url=base, api_key=key, max_retries=0, timeout=60)
    ask = [{"role": "user", "content": "reindex src with the project's tool"}]
    result = {"streamed": client_tool_loop(client, ask, True)}
    result["streamed"]["runs"] = runs()
    result["non_streamed"] = client_tool_loop(client, ask, False)
    result["non_streamed"]["runs"] = runs()
    # A result for a call whose run is gone (a restart): a fresh run with the whole conversation.
    late = ask + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_before_restart", "type": "function",
                                                               "function": {"name": "sem_reindex",
                                                                            "arguments": "{\"path\": \"docs\"}"}}]},
        {"role": "tool", "tool_call_id": "call_before_restart", "content": "reindexed docs: 7 files (LATE-RESULT)"},
    ]
    result["fallback"] = client_tool_loop(client, late, False)
    result["fallback"]["runs"] = runs()
    return result


def paused(base, key, runs_file, go):
    """The run paused on the client's tool while it goes on producing: how much the stand-in could
    print before the answer (its count stops growing when the run is held back), then everything
    the run said after it."""
    import os
    import time

    client = OpenAI(base_url=base, api_key=key, max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "reindex src with the project's tool"}]
    content, tool_calls, finish, _ = read_stream(
        client.chat.completions.create(model="auto", messages=messages, tools=CLIENT_TOOLS, stream=True))
    assert finish == "tool_calls" and len(tool_calls) == 1, (finish, tool_calls)
    first = content
    # The call is seen: the run goes on producing. Wait (bounded) until the stand-in printed all
    # or its count stood still for 3 s.
    open(go, "w").close()
    written, since, deadline = 0, time.monotonic(), time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(go + ".written") as f:
                now = int(f.read() or 0)
        except (OSError, ValueError):
            now = 0
        if now != written:
            written, since = now, time.monotonic()
        elif written > 0 and time.monotonic() - since > 3:
            break
        time.sleep(0.05)
    call = tool_calls[0]
    messages = messages + [
        {"role": "assistant", "content": content or None, "tool_calls": [
            {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "reindexed src: 42 files"},
    ]
    content, tool_calls, finish, _ = read_stream(
        client.chat.completions.create(model="auto", messages=messages, tools=CLIENT_TOOLS, stream=True))
    with open(runs_file) as f:
        runs = len(f.read().splitlines())
    chatter = re.findall(r"chatter (\d{6}) ", first + content)
    return {"written_while_paused": written, "finish": finish, "tool_calls": tool_calls, "runs": runs,
            "chatter": chatter, "ends_with": content[-200:]}


def main():
    mode, base = sys.argv[1], sys.argv[2]
    if mode == "replay":
        key = sys.argv[3]
        client = OpenAI(base_url=base, api_key=key, max_retries=0, timeout=60)
        models = [m.id for m in client.models.list()]
        result = {"models": models, "bad": bad_requests(client, base, key)}
        # The bad requests left the server as it was.
        result["streamed"] = streamed_tool_loop(client)
        result["non_streamed"] = non_streamed(client)
    elif mode == "tools":
        result = client_tools(base, sys.argv[3], sys.argv[4])
    elif mode == "paused":
        result = paused(base, sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        client = OpenAI(base_url=base, api_key=sys.argv[3], max_retries=0, timeout=60)
        done = client.chat.completions.create(model="auto", messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What does the price code do?"},
            {"role": "assistant", "content": "It rounds totals (HISTORY-MARKER-7)."},
            {"role": "user", "content": "Fix the rounding bug."},
        ])
        result = {"content": done.choices[0].message.content, "finish": done.choices[0].finish_reason,
                  "usage_total": done.usage.total_tokens}
        streamed = client.chat.completions.create(model="auto", stream=True,
                                                  messages=[{"role": "user", "content": "again"}])
        result["streamed"] = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
