"""`serve --model` and `mcp --model` started as a user starts them (a subprocess, the real
0.5B preset): both crashed at start once (`load_model() got an unexpected keyword argument
'slots'`) while the tests that built the services in process passed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import httpx
import pytest

from conftest import CHINOOK, REPO


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "sqlscout.cli.main", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_serve_with_a_model_starts_and_answers_a_question(qwen05_gguf) -> None:
    server = _start(["serve", f"music={CHINOOK}", "--model", "qwen2.5-coder-0.5b", "--port", "0", "--threads", "1"])
    try:
        line = ""
        deadline = time.monotonic() + 120
        while "http://" not in line and time.monotonic() < deadline and server.poll() is None:
            line = server.stderr.readline()
        found = re.search(r"http://[^ ]+", line)
        assert found, f"the server did not start: {line}{server.stderr.read() if server.poll() is not None else ''}"
        base = found.group(0).rstrip("/").removesuffix("(API")
        answer = httpx.post(f"{base}/v1/ask", json={"db": "music", "question": "How many genres are there?", "stream": False}, timeout=300).json()
        assert answer["db"] == "music" and answer["sql"], answer
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_mcp_with_a_model_starts_and_lists_ask(qwen05_gguf) -> None:
    server = _start(["mcp", f"music={CHINOOK}", "--model", "qwen2.5-coder-0.5b", "--threads", "1"])
    try:
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]  # fmt: skip
        for message in messages:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
        replies = {}
        deadline = time.monotonic() + 120
        while 2 not in replies and time.monotonic() < deadline:
            text = server.stdout.readline()
            if not text:
                break
            reply = json.loads(text)
            replies[reply.get("id")] = reply
        assert 2 in replies, server.stderr.read() if server.poll() is not None else "no reply to tools/list"
        assert "ask" in [t["name"] for t in replies[2]["result"]["tools"]]
    finally:
        server.terminate()
        server.wait(timeout=30)
