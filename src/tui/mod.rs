//! The full-screen TUI (`mm -tui`): raw mode and the alternate screen, a
//! panic hook and every exit path that restore the terminal, the input
//! stream, and a loop that coalesces bursts of events into at most one
//! frame every 16 ms and draws nothing while nothing changes.

pub mod app;
mod commands;
pub mod component;
mod input;
pub mod jobs;
pub mod keymap;
pub mod keys;
mod layout;
pub mod panes;
pub mod partial_json;
pub mod render;
mod slash;
pub mod theme;

use std::io::{Stdout, Write};
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event,
    EventStream, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::bus::{EventReceiver, OpSender};
use crate::protocol::Op;
pub use app::App;
use component::Effect;

/// The shortest time between two frames.
const FRAME: Duration = Duration::from_millis(16);
/// How often the screen moves while the agent works (spinner, elapsed time).
const TICK: Duration = Duration::from_millis(100);

/// The terminal is in raw mode on the alternate screen.
static ENTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Puts the terminal back if the TUI had taken it (a signal's way out).
pub fn restore_if_entered() {
    if ENTERED.load(std::sync::atomic::Ordering::SeqCst) {
        restore();
    }
}

/// Puts the terminal back as it was; safe to call more than once.
pub fn restore() {
    ENTERED.store(false, std::sync::atomic::Ordering::SeqCst);
    let mut out = std::io::stdout();
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

fn enter(mouse: bool) -> std::io::Result<()> {
    ENTERED.store(true, std::sync::atomic::Ordering::SeqCst);
    terminal::enable_raw_mode()?;
    let mut out = std::io::stdout();
    execute!(out, EnterAlternateScreen, EnableBracketedPaste)?;
    if mouse {
        execute!(out, EnableMouseCapture)?;
    }
    // Lets Shift-Enter arrive as its own key where the terminal can say
    // so. Pushed without asking first: the question
    // (`supports_keyboard_enhancement`) blocks until the terminal answers,
    // two seconds before the first frame in one that never does; a
    // terminal without the protocol ignores the sequence.
    let _ = execute!(
        out,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    );
    Ok(())
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Stops the process (Ctrl-Z) with the terminal restored; redraws on `fg`.
fn suspend(term: &mut Terminal<CrosstermBackend<Stdout>>, mouse: bool) -> std::io::Result<()> {
    restore();
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP);
    enter(mouse)?;
    term.clear()?;
    Ok(())
}

/// Runs the TUI until the user quits. Returns the exit code and the
/// session on screen at the end (`/new` may have changed it).
pub async fn run(mut app: App, ops: OpSender, mut events: EventReceiver) -> (i32, String) {
    let code = run_loop(&mut app, &mut events).await;
    restore();
    ops.send(Op::Cancel);
    ops.send(Op::Shutdown);
    (code, app.status.info.session.clone())
}

async fn run_loop(app: &mut App, events: &mut EventReceiver) -> i32 {
    render::highlight::warm_up();
    install_panic_hook();
    if let Err(e) = enter(app.mouse_capture) {
        restore();
        eprintln!("mm: cannot start the TUI: {e}");
        return 1;
    }
    let mut term = match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
        Ok(t) => t,
        Err(e) => {
            restore();
            eprintln!("mm: cannot start the TUI: {e}");
            return 1;
        }
    };
    let Some(mut jobs) = app.jobs.take_receiver() else {
        restore();
        eprintln!("mm: the TUI started twice");
        return 1;
    };
    let mut input = EventStream::new();
    let mut last_draw = Instant::now() - FRAME;
    // The bell rings once what it calls for is on screen.
    let mut bell = false;
    loop {
        app.sync_watch();
        if app.dirty && last_draw.elapsed() >= FRAME {
            // One synchronized update a frame: terminals that support it
            // show the frame whole, never half drawn.
            let _ = execute!(std::io::stdout(), terminal::BeginSynchronizedUpdate);
            let drawn = term.draw(|f| app.render(f));
            let _ = execute!(std::io::stdout(), terminal::EndSynchronizedUpdate);
            if let Err(e) = drawn {
                restore();
                eprintln!("mm: the screen could not be drawn: {e}");
                return 1;
            }
            app.dirty = false;
            last_draw = Instant::now();
            if std::mem::take(&mut bell) {
                let _ = std::io::stdout().write_all(b"\x07");
                let _ = std::io::stdout().flush();
            }
        }
        let wait = if app.dirty {
            FRAME.saturating_sub(last_draw.elapsed())
        } else if app.animating() {
            TICK
        } else {
            Duration::from_secs(3600)
        };
        let effects = tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(Event::Key(k))) => app.on_key(k),
                Some(Ok(Event::Paste(text))) => app.on_paste(&text),
                Some(Ok(Event::Mouse(m))) => app.on_mouse(m),
                Some(Ok(Event::Resize(..))) => {
                    let _ = term.autoresize();
                    app.dirty = true;
                    Vec::new()
                }
                Some(Ok(_)) => Vec::new(),
                Some(Err(_)) | None => return 1,
            },
            ev = events.recv() => match ev {
                Some(ev) => {
                    let mut fx = app.on_event(ev);
                    // A burst of tokens becomes one frame.
                    while let Ok(more) = events.try_recv() {
                        fx.extend(app.on_event(more));
                    }
                    fx
                }
                None => return 1,
            },
            Some(done) = jobs.recv() => {
                app.on_job(done);
                Vec::new()
            }
            _ = tokio::time::sleep(wait) => {
                if app.tick() {
                    app.dirty = true;
                }
                Vec::new()
            }
        };
        for effect in effects {
            match effect {
                Effect::Quit => return 0,
                Effect::Suspend => {
                    if let Err(e) = suspend(&mut term, app.mouse_capture) {
                        restore();
                        eprintln!("mm: cannot resume the TUI: {e}");
                        return 1;
                    }
                    app.dirty = true;
                }
                Effect::Bell => bell = true,
                other => perform(app, other),
            }
        }
    }
}

/// An effect that only writes to the terminal: a notification, the mouse
/// capture, a copy to the clipboard.
fn perform(app: &mut App, effect: Effect) {
    match effect {
        Effect::Notify(text) => {
            use std::io::Write;
            let env = crate::clipboard::Env::detect(true);
            let seq = crate::notify::sequence(&text, crate::notify::Osc::detect(), &env);
            let mut out = std::io::stdout();
            let _ = out.write_all(&seq).and_then(|()| out.flush());
        }
        Effect::MouseCapture(on) => {
            let mut out = std::io::stdout();
            let _ = if on {
                execute!(out, EnableMouseCapture)
            } else {
                execute!(out, DisableMouseCapture)
            };
        }
        Effect::Copy { what, text } => {
            let env = crate::clipboard::Env::detect(true);
            let mut out = std::io::stdout();
            let got = crate::clipboard::copy(&text, &env, &mut out, &app.root.join(".mm"));
            app.copied(&what, &got, &text);
        }
        Effect::Quit | Effect::Suspend | Effect::Bell => {}
    }
}

#[cfg(test)]
mod tests;
