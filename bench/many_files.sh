#!/usr/bin/env bash
# What mm's bookkeeping costs after one command creates many files: a git
# repository, `mm -p -auto` whose scripted model runs one command that
# writes N new files, then answers. The time is mm's whole run (the
# command itself takes a fraction of a second). Target (issue 31): 100,000
# new files in at most 5 s.
#
#   bench/many_files.sh [MM_BINARY] [N...]   (default: target/release/mm, 10000 100000)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MM=$(realpath "${1:-target/release/mm}")
shift || true
SIZES=("${@:-10000 100000}")
[ $# -eq 0 ] && SIZES=(10000 100000)
for N in "${SIZES[@]}"; do
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"; kill $SERVER 2>/dev/null' EXIT
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  python3 - "$N" >"$WORK/script.json" <<'PY'
import json, sys
n = int(sys.argv[1])
cmd = "python3 -c \"import os\nfor d in range(%d):\n  os.makedirs('gen/d%%d' %% d, exist_ok=True)\n  for f in range(100): open('gen/d%%d/f%%d.txt' %% (d, f), 'w').write('file %%d %%d\\n' %% (d, f))\"" % (n // 100)
print(json.dumps([{"call": "bash", "args": {"command": cmd}}, {"text": "done"}]))
PY
  python3 bench/scripted_server.py "$PORT" "$WORK/script.json" &
  SERVER=$!
  for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/models" && break; sleep 0.1; done
  mkdir "$WORK/ws" && cd "$WORK/ws"
  git init -q && echo a >a.txt && git add -A && git -c user.name=b -c user.email=b@b commit -qm init
  # The command alone, in a folder beside it: the file system's share.
  mkdir "$WORK/alone" && (cd "$WORK/alone" && c0=$(date +%s.%N) && python3 -c "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["args"]["command"].split("python3 -c ",1)[1][1:-1].replace("\\\"", "\""))' "$WORK/script.json")" && echo "$c0 $(date +%s.%N)" >"$WORK/alone.t")
  alone=$(awk '{print $2 - $1}' "$WORK/alone.t")
  rm -rf "$WORK/alone"
  start=$(date +%s.%N)
  HOME="$WORK" ${MM_WRAP:-} "$MM" -p "make the files" -auto -url "http://127.0.0.1:$PORT/v1" >/dev/null 2>"$WORK/stderr" || { tail -5 "$WORK/stderr"; }
  end=$(date +%s.%N)
  made=$(find gen -type f | wc -l)
  total=$(echo "$end - $start" | bc)
  printf '%7d new files: mm run %.2f s, the command alone %.2f s, mm %.2f s (%d files made)\n' "$N" "$total" "$alone" "$(echo "$total - $alone" | bc)" "$made"
  cd - >/dev/null
  kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true
  rm -rf "$WORK"
done
