#!/usr/bin/env python3
"""An OpenAI-compatible server that answers every chat request at once with a
streamed reply of N tokens (one token per SSE chunk, as llama-server sends
them). For measuring the client, not the model.

usage: instant_server.py PORT [TOKENS]"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
TOKENS = int(sys.argv[2]) if len(sys.argv) > 2 else 2000

def chunk(delta, finish=None):
    return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "model": "instant",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

parts = [chunk({"role": "assistant", "content": None})]
# Distinct tokens: a reply that cycles is a runaway mm stops.
parts += [chunk({"content": "tok%d " % i}) for i in range(TOKENS)]
parts.append(chunk({}, "stop"))
parts.append("data: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": TOKENS,
    "prompt_tokens_details": {"cached_tokens": 0}}}) + "\n\n")
parts.append("data: [DONE]\n\n")
BODY = "".join(parts).encode()

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
            self.send_json({"object": "list", "data": [{"id": "instant"}]})
        else:
            self.send_json({"default_generation_settings": {"n_ctx": 16384}})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
