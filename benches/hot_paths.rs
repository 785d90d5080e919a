//! The paths every request and every round runs: folding an SSE stream,
//! judging a command, matching an edit, counting a diff, appending to the
//! session log. `cargo bench`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

use mm::llm::stream::Assembler;

fn recorded(name: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/sse/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").map(str::to_string))
        .collect()
}

fn sse(c: &mut Criterion) {
    // 200 tokens recorded from llama-server, one token per chunk.
    let payloads = recorded("llama-server-length.sse");
    c.bench_function("sse: fold 200 recorded llama-server chunks", |b| {
        b.iter(|| {
            let mut a = Assembler::new();
            for p in &payloads {
                black_box(a.push(p).unwrap());
            }
            black_box(a.finish())
        });
    });
    let calls = recorded("llama-server-tool-call.sse");
    c.bench_function("sse: fold a recorded tool call", |b| {
        b.iter(|| {
            let mut a = Assembler::new();
            for p in &calls {
                black_box(a.push(p).unwrap());
            }
            black_box(a.finish())
        });
    });
}

fn policy(c: &mut Criterion) {
    let cmd =
        "git --no-pager log --oneline -20 && grep -rn 'fn main' src | head -5 && cargo check 2>&1";
    c.bench_function("policy: judge a three-part command", |b| {
        b.iter(|| black_box(mm::sandbox::policy::judge(black_box(cmd))));
    });
}

fn edits(c: &mut Criterion) {
    let file: String = (0..2000)
        .map(|i| format!("    let value_{i} = compute({i}, \"text {i}\");\n"))
        .collect();
    let old = "let value_1500 = compute(1500, \"text 1500\");\nlet value_1501 = compute(1501, \"text 1501\");";
    c.bench_function("edit: indentation-forgiving match in 2,000 lines", |b| {
        b.iter(|| black_box(mm::tools::edit_match::find(&file, black_box(old), "x").unwrap()));
    });
    let changed = file.replace("compute(1000,", "compute(1001,");
    c.bench_function("diff: line counts of 2,000 lines, one changed", |b| {
        b.iter(|| black_box(mm::diff::line_counts(&file, &changed)));
    });
}

fn session(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut log = mm::session::SessionLog::create(dir.path(), "local", "m").unwrap();
    let msg =
        mm::llm::Message::assistant("a reply of a few dozen words, as most replies are ".repeat(4));
    c.bench_function("session: append one message (fsync)", |b| {
        b.iter(|| log.append_message(black_box(&msg), None).unwrap());
    });
}

criterion_group!(benches, sse, policy, edits, session);
criterion_main!(benches);
