#!/usr/bin/env python3
"""Time from starting `mm -tui` to its first frame on screen.

    bench/first_frame.py [MM_BINARY] [RUNS]   (default: target/release/mm, 10 runs)

Two terminals: a bare pseudo-terminal that answers no query (as some
multiplexers, CI runners and serial consoles do), and tmux, which answers
them. The first frame is the moment the welcome ("Ask mm to do something")
can be read from the terminal. An instant server on 127.0.0.1 stands in
for the model. Prints the median and the worst run of each.
"""

import fcntl
import os
import pty
import select
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MM = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "target/release/mm")
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
WELCOME = b"Ask mm to do something"
# In the raw bytes a frame skips blank cells with cursor moves: a word of
# the welcome, not the whole line, is what can be found there.
WELCOME_WORD = b"something"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def silent_pty(args, cwd):
    """Seconds until the welcome shows in a terminal that never answers."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    os.set_blocking(master, False)
    start = time.monotonic()
    child = subprocess.Popen(args, cwd=cwd, stdin=slave, stdout=slave, stderr=slave,
                             start_new_session=True, env={**os.environ, "TERM": "xterm-256color"})
    os.close(slave)
    seen = b""
    elapsed = None
    while time.monotonic() - start < 10:
        r, _, _ = select.select([master], [], [], 0.5)
        if not r:
            continue
        try:
            seen += os.read(master, 65536)
        except OSError:
            break
        if WELCOME_WORD in seen:
            elapsed = time.monotonic() - start
            break
    child.kill()
    child.wait()
    os.close(master)
    return elapsed


def in_tmux(args, cwd):
    """Seconds until the welcome shows in a tmux pane."""
    name = f"mmbench{os.getpid()}"
    cmd = " ".join(f"'{a}'" for a in args)
    start = time.monotonic()
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                    "-c", cwd, cmd], check=True)
    elapsed = None
    while time.monotonic() - start < 10:
        out = subprocess.run(["tmux", "capture-pane", "-p", "-t", name],
                             capture_output=True).stdout
        if WELCOME in out:
            elapsed = time.monotonic() - start
            break
        time.sleep(0.002)
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    return elapsed


def report(label, runs):
    got = [r for r in runs if r is not None]
    if not got:
        print(f"{label:<28} never drew the welcome")
        return
    ms = [r * 1000 for r in got]
    print(f"{label:<28} median {statistics.median(ms):6.1f} ms   worst {max(ms):6.1f} ms"
          f"   ({len(got)}/{len(runs)} runs)")


def main():
    port = free_port()
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "instant_server.py"),
                               str(port), "10"])
    try:
        url = f"http://127.0.0.1:{port}/v1"
        for _ in range(50):
            try:
                urllib.request.urlopen(url + "/models", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        work = tempfile.mkdtemp()
        args = [MM, "-tui", "-url", url, "-model", "instant"]
        report("silent pseudo-terminal", [silent_pty(args, work) for _ in range(RUNS)])
        if shutil.which("tmux"):
            report("tmux", [in_tmux(args, work) for _ in range(RUNS)])
        else:
            print("tmux                         not installed: skipped")
        shutil.rmtree(work, ignore_errors=True)
    finally:
        server.kill()


if __name__ == "__main__":
    main()
