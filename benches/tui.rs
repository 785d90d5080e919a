//! The TUI's frame costs: a 10,000-message (~1 MB) transcript drawn into
//! a 120x40 buffer, and the frame after a burst of streamed tokens (at
//! 5,000 tokens/s and 60 frames/s, about 84 tokens land between frames).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use mm::bus::OpSender;
use mm::protocol::SessionInfo;
use mm::protocol::{AgentEvent, Outcome};
use mm::tui::App;
use mm::tui::{keymap, theme};

fn app(dir: &std::path::Path) -> App {
    let theme = theme::load("dark", dir, theme::ColorDepth::TrueColor).unwrap();
    let keys = keymap::load("default").unwrap();
    let (tx, rx) = OpSender::channel();
    std::mem::forget(rx);
    App::new(theme, keys, tx, dir.to_path_buf(), SessionInfo::default())
}

fn long_transcript(app: &mut App) -> usize {
    let mut bytes = 0;
    for turn in 1..=5_000u64 {
        let prompt = format!("question number {turn}: what does the function on line {turn} do?");
        let answer = format!(
            "It **adds** two numbers and returns the sum; see `add` in calc.py, line {turn}. The tests cover it, and they pass.\n\n- checked: yes\n- changed: nothing\n"
        );
        bytes += prompt.len() + answer.len();
        app.on_agent(AgentEvent::TurnStarted { turn, prompt });
        app.on_agent(AgentEvent::Token { turn, text: answer });
        app.on_agent(AgentEvent::TurnFinished {
            turn,
            outcome: Outcome::Done,
            answer: String::new(),
            error: None,
        });
    }
    bytes
}

fn frames(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let area = Rect::new(0, 0, 120, 40);
    let mut a = app(dir.path());
    let bytes = long_transcript(&mut a);
    assert!(bytes > 1_000_000, "{bytes}");
    let mut buf = Buffer::empty(area);
    a.draw(area, &mut buf);
    c.bench_function("tui: frame of a 10,000-message transcript (120x40)", |b| {
        b.iter(|| {
            buf.reset();
            a.draw(area, &mut buf);
            black_box(&buf);
        });
    });

    let mut s = app(dir.path());
    s.on_agent(AgentEvent::TurnStarted {
        turn: 1,
        prompt: "write a long answer".into(),
    });
    let mut buf = Buffer::empty(area);
    let mut n = 0u64;
    c.bench_function("tui: 84 streamed tokens, then one frame", |b| {
        b.iter(|| {
            for _ in 0..84 {
                n += 1;
                let text = if n.is_multiple_of(12) {
                    "word.\n\n".to_string()
                } else {
                    format!("word{} ", n % 7)
                };
                s.on_agent(AgentEvent::Token { turn: 1, text });
            }
            buf.reset();
            s.draw(area, &mut buf);
            black_box(&buf);
        });
    });
}

criterion_group!(benches, frames);
criterion_main!(benches);
