#!/usr/bin/env bash
# Wall time, CPU time and peak memory of one headless 2,000-token answer from
# an instant server: `mm -p` against a plain `curl` of the same stream, and
# against the floor: `sh` running `curl` for the same exchange mm makes
# (the server's /props for the window, then the streamed answer). The last
# line gives mm's CPU as a multiple of the floor's (issue 32's goal: 1.3).
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
  # /usr/bin/time counts in hundredths of a second, which reads curl as
  # 0.00: each run is timed here with wait4 (microseconds, and max RSS).
  local label=$1; shift
  python3 - "$label" "$RUNS" "$WORK/stderr" "$@" <<'PY'
import os, statistics, sys, time
label, runs, errf, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
rows = []
for _ in range(runs):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        os.dup2(fd, 0); os.dup2(fd, 1)
        err = os.open(errf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(err, 2)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.stderr.write(open(errf).read())
        sys.exit(f"{label}: exit {os.waitstatus_to_exitcode(status)}")
    rows.append((wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024))
wall = statistics.median(r[0] for r in rows)
cpu = statistics.median(r[1] for r in rows)
rss = statistics.median(r[2] for r in rows)
print(f"{label:<22} wall {wall:.3f} s   cpu {cpu:.3f} s   max RSS {rss:.1f} MiB   ({len(rows)} runs)")
with open(errf + ".cpu", "a") as f:
    f.write(f"{label} {cpu}\n")
PY
}

CHAT=(curl -sN -X POST -H 'Content-Type: application/json' --data-binary "@$BODY" "http://127.0.0.1:$PORT/v1/chat/completions")
measure sh+curl-floor sh -c 'curl -s "$1/props" >/dev/null && shift && exec "$@"' sh "http://127.0.0.1:$PORT" "${CHAT[@]}"
measure curl curl -sN -X POST -H 'Content-Type: application/json' --data-binary "@$BODY" "http://127.0.0.1:$PORT/v1/chat/completions"
cd "$WORK"
measure mm-model-given "$MM" -p hi -url "http://127.0.0.1:$PORT/v1" -model instant
measure mm-no-config env MM_LOCAL_ENDPOINTS="http://127.0.0.1:$PORT/v1" "$MM" -p hi
python3 - "$WORK/stderr.cpu" <<'PY'
import sys
cpu = dict(line.split() for line in open(sys.argv[1]))
floor = float(cpu["sh+curl-floor"])
print(f"mm CPU / floor: {float(cpu['mm-model-given']) / floor:.2f}x (model given), "
      f"{float(cpu['mm-no-config']) / floor:.2f}x (no config)")
PY
rm -rf "$WORK"
