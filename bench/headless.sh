#!/usr/bin/env bash
# Wall time, CPU time and peak memory of one headless 2,000-token answer from
# an instant server: `mm -p` against a plain `curl` of the same stream.
#
#   bench/headless.sh [MM_BINARY] [RUNS]     (default: target/release/mm, 10 runs)
#
# Prints the median of each figure. Build first: cargo build --release
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MM=$(realpath "${1:-target/release/mm}")
RUNS=${2:-10}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 bench/instant_server.py "$PORT" 2000 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/models" && break; sleep 0.1; done

WORK=$(mktemp -d)
BODY=$WORK/body.json
echo '{"model":"instant","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$BODY"

measure() { # label, command...
  local label=$1; shift
  local f=$WORK/$label.txt
  : >"$f"
  for _ in $(seq 1 "$RUNS"); do
    /usr/bin/time -f "%e %U %S %M" -a -o "$f" "$@" </dev/null >/dev/null 2>"$WORK/stderr" || { cat "$WORK/stderr"; exit 1; }
  done
  python3 - "$label" "$f" <<'PY'
import statistics, sys
rows = [list(map(float, l.split()[-4:])) for l in open(sys.argv[2]) if l.strip() and not l.startswith("Command")]
wall = statistics.median(r[0] for r in rows)
cpu = statistics.median(r[1] + r[2] for r in rows)
rss = statistics.median(r[3] for r in rows) / 1024
print(f"{sys.argv[1]:<22} wall {wall:.3f} s   cpu {cpu:.3f} s   max RSS {rss:.1f} MiB   ({len(rows)} runs)")
PY
}

measure curl curl -sN -X POST -H 'Content-Type: application/json' --data-binary "@$BODY" "http://127.0.0.1:$PORT/v1/chat/completions"
cd "$WORK"
measure mm-model-given "$MM" -p hi -url "http://127.0.0.1:$PORT/v1" -model instant
measure mm-no-config env MM_LOCAL_ENDPOINTS="http://127.0.0.1:$PORT/v1" "$MM" -p hi
rm -rf "$WORK"
