//! A guard on what a language server sends: its messages are framed by a
//! `Content-Length` header, and the LSP library reserves that many bytes
//! before it reads the body. A server (the project's own program, in the
//! fence) that announces a terabyte aborts mm. The guard reads the headers
//! as they pass and fails the stream on a length over `MAX_FRAME` or a
//! header line that never ends, before the library sees either. It also
//! counts the JSON values of each body as it passes: the library's tree of
//! a message costs some 150 bytes a value, and a message of tiny values
//! (`[{"":0},{"":0},…]`) under the length limit cost mm over a gigabyte.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::AsyncRead;

/// The largest message a server may send (a workspace's symbols, a long
/// file's diagnostics are far below it). The library parses a message
/// into a JSON tree first, at some 50 times its size: 8 MiB costs mm
/// about 500 MB while it is read.
pub const MAX_FRAME: u64 = 8 << 20;
/// The longest header line.
const MAX_HEADER_LINE: usize = 8 * 1024;
/// The most JSON values (counted by the `{`, `[`, `,` and `:` outside
/// strings) a message may hold: some 75 MB of the library's tree at most.
/// A file's diagnostics or a workspace's symbols hold far fewer.
pub const MAX_VALUES: u64 = 500_000;

/// Where the reader is in the stream of messages.
enum State {
    /// In the headers: the current line so far.
    Header(Vec<u8>),
    /// In a body, with this many bytes of it to come.
    Body(u64),
}

pub struct Guarded<R> {
    inner: R,
    state: State,
    /// The length the headers of the current message gave.
    length: u64,
    /// In the current body: inside a JSON string, after a backslash in
    /// one, and the values counted so far.
    in_string: bool,
    escaped: bool,
    values: u64,
}

impl<R> Guarded<R> {
    pub fn new(inner: R) -> Self {
        Guarded {
            inner,
            state: State::Header(Vec::new()),
            length: 0,
            in_string: false,
            escaped: false,
            values: 0,
        }
    }

    /// Follows the framing through `bytes`; an error when a message breaks
    /// the limits.
    fn scan(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let bad = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
        while !bytes.is_empty() {
            match &mut self.state {
                State::Body(left) => {
                    let n = (*left).min(bytes.len() as u64);
                    *left -= n;
                    let done = *left == 0;
                    let (body, rest) = bytes.split_at(n as usize);
                    bytes = rest;
                    self.count_values(body);
                    if self.values > MAX_VALUES {
                        return Err(bad(format!(
                            "the server sent a message of more than {MAX_VALUES} JSON values"
                        )));
                    }
                    if done {
                        self.state = State::Header(Vec::new());
                        self.in_string = false;
                        self.escaped = false;
                        self.values = 0;
                    }
                }
                State::Header(line) => {
                    let b = bytes[0];
                    bytes = &bytes[1..];
                    if b != b'\n' {
                        line.push(b);
                        if line.len() > MAX_HEADER_LINE {
                            return Err(bad("a header line of the server's is too long".into()));
                        }
                        continue;
                    }
                    // Read exactly as the LSP library reads it (a line is
                    // `Name: value\r\n`, the blank line is `\r\n`, the name
                    // untrimmed): what it would take otherwise is refused,
                    // so the two never disagree on where a body starts.
                    let raw = std::mem::take(line);
                    if raw == b"\r" {
                        let length = std::mem::take(&mut self.length);
                        self.state = if length == 0 {
                            State::Header(Vec::new())
                        } else {
                            State::Body(length)
                        };
                        continue;
                    }
                    let header = std::str::from_utf8(&raw)
                        .ok()
                        .and_then(|t| t.strip_suffix('\r'))
                        .and_then(|t| t.split_once(": "))
                        .ok_or_else(|| {
                            bad(format!(
                                "a header line of the server's that is not `Name: value`: {:?}",
                                String::from_utf8_lossy(&raw)
                            ))
                        })?;
                    if header.0.eq_ignore_ascii_case("content-length") {
                        let n: u64 = header.1.parse().map_err(|_| {
                            bad(format!(
                                "a Content-Length that is no number: {:?}",
                                header.1
                            ))
                        })?;
                        if n > MAX_FRAME {
                            return Err(bad(format!(
                                "the server announced a message of {n} bytes (at most {MAX_FRAME})"
                            )));
                        }
                        self.length = n;
                    }
                }
            }
        }
        Ok(())
    }
}

impl<R> Guarded<R> {
    /// Counts the structural bytes of a piece of the current body.
    fn count_values(&mut self, body: &[u8]) {
        for &b in body {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' | b',' | b':' => self.values += 1,
                _ => {}
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Guarded<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(n)) => Poll::Ready(this.scan(&buf[..n]).map(|()| n)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::AsyncReadExt;

    fn read_all(input: &[u8]) -> io::Result<Vec<u8>> {
        futures::executor::block_on(async {
            let mut g = Guarded::new(input);
            let mut out = Vec::new();
            g.read_to_end(&mut out).await.map(|_| out)
        })
    }

    #[test]
    fn messages_pass_as_they_are_and_a_huge_length_stops_the_stream() {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":null}"#;
        let two = format!(
            "Content-Length: {}\r\n\r\n{body}content-length: {}\r\nContent-Type: x\r\n\r\n{body}",
            body.len(),
            body.len()
        );
        assert_eq!(read_all(two.as_bytes()).unwrap(), two.as_bytes());
        // A body holding header-like text is a body.
        let tricky = "Content-Length: 40\r\n\r\nContent-Length: 1099511627776\r\n\r\n12345";
        assert!(read_all(tricky.as_bytes()).is_ok());
        let huge = "Content-Length: 1099511627776\r\n\r\n";
        let e = read_all(huge.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("1099511627776 bytes"), "{e}");
        let endless = vec![b'x'; MAX_HEADER_LINE + 10];
        assert!(read_all(&endless).is_err());
        // A header the library would skip (a space before the colon) is
        // refused, not taken for a length (the guard and the library
        // then disagreed on where the body starts).
        let skewed = "Content-Length: 2\r\nContent-Length : 40\r\n\r\n{}Content-Length: 1099511627776\r\n\r\n";
        assert!(read_all(skewed.as_bytes()).is_err());
        assert!(read_all(b"Content-Length:2\r\n\r\n{}").is_err());
        assert!(read_all(b"Content-Length: 2\n\n{}").is_err());
    }

    /// Red-team round 24: a message of tiny values under the length limit
    /// cost mm over a gigabyte while the library parsed it. Values are
    /// counted as the body passes; those in strings are text, not values.
    #[test]
    fn a_message_of_too_many_values_stops_the_stream() {
        let frame = |body: &str| format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let tiny = format!("[{}{{\"\":0}}]", "{\"\":0},".repeat(200_000));
        let e = read_all(frame(&tiny).as_bytes()).unwrap_err();
        assert!(e.to_string().contains("JSON values"), "{e}");
        // The same bytes as a string's text, escaped quotes and all.
        let text = format!("{{\"a\":\"{}\\\"\"}}", "{\\\":0},".repeat(200_000));
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
        let two = format!("{}{}", frame(&text), frame("{\"id\":1}"));
        assert_eq!(read_all(two.as_bytes()).unwrap(), two.as_bytes());
    }
}
