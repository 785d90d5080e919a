//! Images: a picture the prompt names goes to the model with it (as a
//! data URL, or an Anthropic image block), `read_file` of a picture shows
//! it to the model, and a model whose server says it cannot take images
//! gets a clear error before anything is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use base64::Engine;
use serde_json::{Value, json};
use support::*;

/// A one-pixel PNG.
fn png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
        .unwrap()
}

fn data_url() -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png())
    )
}

fn seeing(server: &Server, vision: bool) {
    server.route(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 8192}, "modalities": {"vision": vision}}),
    );
}

#[test]
fn a_picture_the_prompt_names_goes_with_it() {
    let server = Server::start(vec![text("A single pixel.")]);
    seeing(&server, true);
    let ws = Workspace::new();
    std::fs::write(ws.path().join("shot.png"), png()).unwrap();
    // One outside the workspace, by its absolute path (dropped in a
    // terminal): the user's own prompt may name it.
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("screen.png");
    std::fs::write(&outside, png()).unwrap();
    let prompt = format!("What is in @shot.png and in {}?", outside.display());
    let out = ws.run(&server, &prompt, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The same bytes twice: one picture, named once.
    assert!(
        stderr(&out).contains("image attached: screen.png (1 KB)\n"),
        "{}",
        stderr(&out)
    );
    let req = &server.requests()[0];
    let content = &req["messages"][1]["content"];
    assert!(content[0]["text"].as_str().unwrap().contains("@shot.png"));
    // The same bytes twice are sent once.
    assert_eq!(content.as_array().unwrap().len(), 2, "{content}");
    assert_eq!(content[1]["image_url"]["url"], data_url());
    // The session log keeps the image, so a resumed session sends it again.
    let log = std::fs::read_to_string(&ws.sessions()[0]).unwrap();
    assert!(log.contains("\"media_type\":\"image/png\""), "{log}");
}

#[test]
fn read_file_of_a_picture_shows_it_to_the_model() {
    let server = Server::start(vec![
        call("r1", "read_file", json!({"path": "logo.png"})),
        text("It is a logo."),
    ]);
    seeing(&server, true);
    let ws = Workspace::new();
    std::fs::write(ws.path().join("logo.png"), png()).unwrap();
    let out = ws.run(&server, "What does the logo look like?", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let messages = server.requests()[1]["messages"].as_array().unwrap().clone();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "tool");
    let said = messages[n - 2]["content"].as_str().unwrap();
    assert!(said.contains("logo.png is an image (image/png"), "{said}");
    assert_eq!(messages[n - 1]["role"], "user");
    assert_eq!(
        messages[n - 1]["content"][1]["image_url"]["url"],
        data_url()
    );
}

#[test]
fn a_model_that_cannot_see_gets_a_clear_error_and_nothing_is_sent() {
    let server = Server::start(vec![text("never")]);
    seeing(&server, false);
    let ws = Workspace::new();
    std::fs::write(ws.path().join("shot.png"), png()).unwrap();
    let out = ws.run(&server, "describe shot.png", &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot take images") && stderr(&out).contains("shot.png"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty());

    // read_file of a picture says the same to the model, which goes on.
    let server = Server::start(vec![
        call("r1", "read_file", json!({"path": "shot.png"})),
        text("I cannot see it."),
    ]);
    seeing(&server, false);
    let out = ws.run(&server, "What colour is the screenshot?", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0].1.contains("this model cannot take images"),
        "{results:?}"
    );
}

#[test]
fn a_file_named_like_a_picture_that_is_not_one_is_not_sent() {
    let server = Server::start(vec![text("ok")]);
    seeing(&server, true);
    let ws = Workspace::new();
    ws.write("fake.png", "not an image at all");
    let out = ws.run(&server, "look at fake.png", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let content: &Value = &server.requests()[0]["messages"][1]["content"];
    assert!(content.is_string(), "{content}");
}

/// Only the user's own typed words reach outside the workspace: a
/// repository's custom command, a prompt read from stdin and a plan name
/// pictures the user did not type, and none of them is read.
#[test]
fn a_picture_outside_is_read_only_when_the_user_typed_its_path() {
    let ws = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("private.png");
    std::fs::write(&outside, png()).unwrap();
    let sent_image = |server: &Server| server.requests()[0]["messages"][1]["content"].is_array();
    // A command the repository brings, naming the picture in its body.
    ws.write(
        ".mm/commands/look.md",
        &format!("Describe {} please.\n", outside.display()),
    );
    let server = Server::start(vec![text("ok")]);
    seeing(&server, true);
    let out = ws.run(&server, "/look", &["-no-harness"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !sent_image(&server),
        "a repository's command sent a picture"
    );
    // A prompt read from stdin (`-p -`: an issue's text, say).
    let server = Server::start(vec![text("ok")]);
    seeing(&server, true);
    let mut child = ws
        .mm()
        .args(["-p", "-", "-url", &server.url(), "-no-harness"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "see {}", outside.display()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!sent_image(&server), "a prompt from stdin sent a picture");
    // Typed, it goes: by its absolute path, quoted with a space in it, or
    // under ~/.
    let spaced = elsewhere.path().join("my shot.png");
    std::fs::write(&spaced, png()).unwrap();
    std::fs::write(ws.home.path().join("home.png"), png()).unwrap();
    for typed in [
        format!("see {}", outside.display()),
        format!("see '{}'", spaced.display()),
        "see ~/home.png".to_string(),
    ] {
        let server = Server::start(vec![text("ok")]);
        seeing(&server, true);
        let out = ws.run(&server, &typed, &["-no-harness"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(sent_image(&server), "{typed}: {}", stderr(&out));
    }
}
