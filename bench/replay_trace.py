#!/usr/bin/env python3
# Replays the requests of one or more trace folders (AGENT_TRACE=1 writes them
# to .mm/traces/<session>/NNNN.json) against a server, in order, asking for one
# token each, and prints what llama-server says it read and found cached:
# how side requests and the prompt cache get along (docs/results/eval.md).
#
#   bench/replay_trace.py http://127.0.0.1:8080 TRACE_DIR...
import json, sys, glob, time, urllib.request
url = sys.argv[1]
tot_ms = 0; tot_n = 0
for d in sys.argv[2:]:
    for f in sorted(glob.glob(d + '/*.json')):
        r = json.load(open(f))['request']
        r = dict(r); r['max_tokens'] = 1; r['stream'] = False; r.pop('stream_options', None)
        t = time.time()
        req = urllib.request.Request(url + '/v1/chat/completions', data=json.dumps(r).encode(), headers={'content-type': 'application/json'})
        out = json.load(urllib.request.urlopen(req, timeout=600))
        ms = (time.time() - t) * 1000
        tm = out.get('timings', {})
        kind = r['messages'][0]['content'][:12]
        tot_ms += ms; tot_n += tm.get('prompt_n', 0)
        print(f"{f.split('/')[-1]} {kind!r:16} prompt_n={tm.get('prompt_n')} cache_n={tm.get('cache_n')} {ms:.0f}ms")
print(f"total {tot_ms/1000:.1f}s, {tot_n} prompt tokens processed")
