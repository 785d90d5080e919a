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
    assert!(
        stderr(&out).contains("image attached: shot.png"),
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

#[test]
fn a_path_inside_a_file_an_editor_embedded_is_not_read() {
    let server = Server::start(vec![text("ok")]);
    seeing(&server, true);
    let ws = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("private.png");
    std::fs::write(&outside, png()).unwrap();
    // What ACP makes of an embedded resource: its text in a <file> block.
    let prompt = format!(
        "summarise this\n<file path=\"README.md\">\nsee {}\n</file>",
        outside.display()
    );
    let out = ws.run(&server, &prompt, &["-no-harness"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let content = &server.requests()[0]["messages"][1]["content"];
    assert!(content.is_string(), "no image may go: {content}");
    // The same path typed by the user is read.
    let server = Server::start(vec![text("ok")]);
    seeing(&server, true);
    let out = ws.run(
        &server,
        &format!("see {}", outside.display()),
        &["-no-harness"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(server.requests()[0]["messages"][1]["content"].is_array());
}
