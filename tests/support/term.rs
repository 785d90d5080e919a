//! `mm` in a real pseudo-terminal, read as plain text: for the REPL.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::Workspace;

pub struct Term {
    pub writer: Box<dyn Write + Send>,
    /// Every byte the terminal got, decoded only when read whole (a
    /// character split across two reads is not lost).
    raw: Arc<Mutex<Vec<u8>>>,
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    /// Bytes of `raw` already matched by `expect`.
    pub seen: usize,
}

impl Term {
    pub fn start(ws: &Workspace, args: &[&str]) -> Term {
        Self::start_with(ws, args, &[])
    }

    /// With extra environment variables.
    pub fn start_with(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Term {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 200,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_mm"));
        cmd.args(args);
        cmd.cwd(ws.dir.path());
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap());
        cmd.env("HOME", ws.home.path());
        cmd.env("NO_COLOR", "1");
        cmd.env("TERM", "xterm");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let r = raw.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                r.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let writer = pty.master.take_writer().unwrap();
        // Keep the master alive as long as the child runs.
        std::mem::forget(pty.master);
        Term {
            writer,
            raw,
            child,
            seen: 0,
        }
    }

    /// Everything shown so far, as text.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }

    /// Waits for `text` to appear after what was already matched.
    pub fn expect(&mut self, text: &str) {
        let start = Instant::now();
        loop {
            {
                let raw = self.raw.lock().unwrap();
                let needle = text.as_bytes();
                if let Some(i) = raw[self.seen..]
                    .windows(needle.len().max(1))
                    .position(|w| w == needle)
                {
                    self.seen += i + needle.len();
                    return;
                }
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("never saw {text:?}; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for whichever of `texts` shows first after what was already
    /// matched; its index, or None after `timeout`.
    pub fn expect_any(&mut self, texts: &[&str], timeout: Duration) -> Option<usize> {
        let start = Instant::now();
        loop {
            {
                let raw = self.raw.lock().unwrap();
                let hit = texts
                    .iter()
                    .enumerate()
                    .filter_map(|(k, t)| {
                        let needle = t.as_bytes();
                        raw[self.seen..]
                            .windows(needle.len().max(1))
                            .position(|w| w == needle)
                            .map(|i| (i, k, needle.len()))
                    })
                    .min();
                if let Some((i, k, n)) = hit {
                    self.seen += i + n;
                    return Some(k);
                }
            }
            if start.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    pub fn exit_code(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.exit_code();
            }
            assert!(start.elapsed() < Duration::from_secs(20), "mm did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
