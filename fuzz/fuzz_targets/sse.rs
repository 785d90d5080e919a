//! The SSE parser and the reply assembler on any bytes a server could
//! send, cut into chunks at any point: no panic, and a reply that is not
//! complete runs no tool.
#![no_main]

use eventsource_stream::Eventsource;
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use mm::llm::stream::{Assembler, whole_completion};

fuzz_target!(|data: &[u8]| {
    let cut = data.first().map(|b| *b as usize % (data.len().max(1))).unwrap_or(0);
    let (a, b) = data.split_at(cut.min(data.len()));
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = vec![
        Ok(bytes::Bytes::copy_from_slice(a)),
        Ok(bytes::Bytes::copy_from_slice(b)),
    ];
    futures::executor::block_on(async {
        let mut events = futures::stream::iter(chunks).eventsource();
        let mut asm = Assembler::new();
        while let Some(ev) = events.next().await {
            let Ok(ev) = ev else { break };
            if asm.push(&ev.data).is_err() {
                return;
            }
        }
        let reply = asm.finish();
        assert!(reply.calls.len() <= mm::llm::stream::MAX_CALLS);
        // Only the server can say a reply is complete: a finish reason or
        // the [DONE] marker must be in what it sent. A cut stream stays
        // incomplete, and an incomplete reply runs no tool.
        // (A JSON key may be spelt with \u escapes, so only data without
        // one is held to this.)
        let said = |w: &[u8]| data.windows(w.len()).any(|x| x == w);
        if !said(b"finish_reason") && !said(b"[DONE]") && !said(b"\\u") {
            assert!(!reply.is_complete());
        }
    });
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = whole_completion(text);
    }
});
