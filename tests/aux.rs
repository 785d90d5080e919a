//! `auxModel` on its own server (`auxUrl`): housekeeping requests (the
//! session's title, `/commit` messages, compaction summaries) go there,
//! never with the main server's key, and the title names the session in
//! `-sessions`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod support;

use support::*;

#[test]
fn the_aux_server_titles_the_session_without_the_main_key() {
    let main = Server::start(vec![text("It splits lines.")]);
    let aux = Server::start(vec![text("\"Title: Fixing the CSV parser.\"")]);
    let ws = Workspace::new();
    ws.write(
        "agent.yaml",
        &format!("auxModel: tiny\nauxUrl: {}\n", aux.url()),
    );
    let out = ws
        .mm()
        .env("LLAMA_API_KEY", "main-secret")
        .args([
            "agent.yaml",
            "-p",
            "what does the csv parser do?",
            "-url",
            &main.url(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(main.requests().len(), 1);
    let asked = aux.requests();
    assert_eq!(asked.len(), 1, "one title request");
    assert_eq!(asked[0]["model"], "tiny");
    assert!(
        asked[0]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("what does the csv parser do?")
    );
    assert_eq!(aux.authorizations(), vec![String::new()]);
    assert_eq!(
        main.authorizations(),
        vec!["Bearer main-secret".to_string()]
    );
    let listed = ws.mm().arg("-sessions").output().unwrap();
    assert!(
        stdout(&listed).contains("Fixing the CSV parser"),
        "{}",
        stdout(&listed)
    );
}

#[test]
fn without_an_aux_model_no_title_is_asked_for() {
    let main = Server::start(vec![text("It splits lines.")]);
    let ws = Workspace::new();
    let out = ws.run(&main, "what does the csv parser do?", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(main.requests().len(), 1);
    let listed = ws.mm().arg("-sessions").output().unwrap();
    assert!(
        stdout(&listed).contains("what does the csv parser do?"),
        "{}",
        stdout(&listed)
    );
}

#[test]
fn a_sub_task_s_session_is_not_titled() {
    let main = Server::start(vec![text("It splits lines.")]);
    let aux = Server::start(vec![text("never asked")]);
    let ws = Workspace::new();
    ws.write(
        "agent.yaml",
        &format!("auxModel: tiny\nauxUrl: {}\n", aux.url()),
    );
    let out = ws
        .mm()
        .env("MM_ASK_DEPTH", "1")
        .args([
            "agent.yaml",
            "-p",
            "what does the csv parser do?",
            "-url",
            &main.url(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(main.requests().len(), 1);
    assert!(aux.requests().is_empty());
}
