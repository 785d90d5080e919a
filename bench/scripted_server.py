#!/usr/bin/env python3
"""An OpenAI-compatible server that answers the Nth chat request with the Nth
reply of a script (then the last one again), streamed as llama-server streams:
a reply is {"text": "..."} or {"call": NAME, "args": {...}}.

usage: scripted_server.py PORT SCRIPT.json"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
SCRIPT = json.load(open(sys.argv[2]))
seen = [0]

def chunk(delta, finish=None):
    return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

def body(reply):
    parts = [chunk({"role": "assistant", "content": None})]
    if "call" in reply:
        parts.append(chunk({"tool_calls": [{"index": 0, "id": "c%d" % seen[0], "type": "function",
            "function": {"name": reply["call"], "arguments": json.dumps(reply["args"])}}]}))
        parts.append(chunk({}, "tool_calls"))
    else:
        parts.append(chunk({"content": reply["text"]}))
        parts.append(chunk({}, "stop"))
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def send_json(self, obj):
        b = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path.endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": "scripted"}]})
        else:
            self.send_json({"default_generation_settings": {"n_ctx": 16384}})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        b = body(SCRIPT[min(seen[0], len(SCRIPT) - 1)])
        seen[0] += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
