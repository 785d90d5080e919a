//! Checkpoints on real repositories in temp dirs, checked against what
//! `git` itself reports: the user's index, refs and stash never change.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use super::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::write(p.join("a.txt"), "one\n").unwrap();
    std::fs::write(p.join("b.txt"), "two\n").unwrap();
    std::fs::write(p.join(".gitignore"), "*.log\nbuild/\n").unwrap();
    git(p, &["add", "-A"]);
    git(p, &["commit", "-qm", "init"]);
    d
}

/// What the user's git state is, byte for byte.
fn user_state(p: &Path) -> (Vec<u8>, String, String, String) {
    (
        std::fs::read(p.join(".git/index")).unwrap_or_default(),
        git(
            p,
            &["for-each-ref", "refs/heads", "refs/tags", "refs/stash"],
        ),
        git(p, &["stash", "list"]),
        std::fs::read_to_string(p.join(".git/HEAD")).unwrap(),
    )
}

fn shadows() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn a_rewind_undoes_edits_new_files_and_deletions_and_touches_nothing_of_the_user() {
    let d = repo();
    let p = d.path();
    std::fs::write(p.join("a.txt"), "one, edited by the user before mm\n").unwrap();
    std::fs::write(p.join("untracked.txt"), "not added\n").unwrap();
    git(p, &["add", "a.txt"]);
    std::fs::write(p.join("debug.log"), "ignored\n").unwrap();
    let before_status = git(p, &["status", "--porcelain"]);
    let before_staged = git(p, &["ls-files", "--stage"]);
    // No git command runs from here to the end of the rewind: git itself
    // rewrites stat data in the index when it refreshes it.
    let before_state = user_state(p);
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, changed) = store.checkpoint(Kind::Turn, 1, "change things").unwrap();
    assert!(changed);
    // The agent's turn: an edit, a new file in a new folder, a deletion.
    std::fs::write(p.join("a.txt"), "one, edited by mm\n").unwrap();
    std::fs::create_dir_all(p.join("src/deep")).unwrap();
    std::fs::write(p.join("src/deep/new.rs"), "fn main() {}\n").unwrap();
    std::fs::remove_file(p.join("b.txt")).unwrap();
    std::fs::remove_file(p.join("untracked.txt")).unwrap();
    std::fs::write(p.join("debug.log"), "ignored, changed\n").unwrap();
    let written = made_now(p, &["a.txt", "src/deep/new.rs", "b.txt", "untracked.txt"]);
    let plan = store.plan(c1, &written, &|_| Some(c1)).unwrap();
    let mut paths: Vec<&str> = plan.changes.iter().map(|c| c.path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        vec!["a.txt", "b.txt", "src/deep/new.rs", "untracked.txt"]
    );
    assert!(plan.foreign().is_empty());
    store.checkpoint(Kind::Safety, 1, "before rewind").unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(
        user_state(p),
        before_state,
        "the index, branches, tags, stash or HEAD changed"
    );
    assert_eq!(git(p, &["status", "--porcelain"]), before_status);
    assert_eq!(git(p, &["ls-files", "--stage"]), before_staged);
    assert_eq!(
        std::fs::read_to_string(p.join("a.txt")).unwrap(),
        "one, edited by the user before mm\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("untracked.txt")).unwrap(),
        "not added\n"
    );
    assert!(!p.join("src").exists(), "new folders go with their files");
    assert_eq!(
        std::fs::read_to_string(p.join("debug.log")).unwrap(),
        "ignored, changed\n",
        "ignored files untouched"
    );
    assert!(git(p, &["log", "--all", "--oneline"]).contains("mm checkpoint"));
}

#[test]
fn a_rewind_can_itself_be_rewound() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("a.txt"), "turn one\n").unwrap();
    std::fs::write(p.join("new.txt"), "new\n").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    let (safety, _) = store.checkpoint(Kind::Safety, 1, "before rewind").unwrap();
    store.apply(&plan).unwrap();
    assert!(!p.join("new.txt").exists());
    // Changed my mind.
    let back = store
        .plan(safety, &HashMap::new(), &|_| Some(safety))
        .unwrap();
    store.apply(&back).unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("a.txt")).unwrap(),
        "turn one\n"
    );
    assert_eq!(std::fs::read_to_string(p.join("new.txt")).unwrap(), "new\n");
}

#[test]
fn an_unchanged_tree_reuses_the_last_checkpoint() {
    let d = repo();
    let sh = shadows();
    let mut store = Store::open_in(d.path(), "s1", sh.path()).unwrap();
    let (a, first) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    let (b, changed) = store.checkpoint(Kind::Command, 1, "ls").unwrap();
    assert!(first && !changed);
    assert_eq!(a, b);
    std::fs::write(d.path().join("a.txt"), "x\n").unwrap();
    let (c, changed) = store.checkpoint(Kind::Command, 1, "sed").unwrap();
    assert!(changed);
    assert_ne!(a, c);
}

/// What mm "made" of these files: their content now ("" when gone).
fn made_now(p: &Path, files: &[&str]) -> HashMap<String, String> {
    files
        .iter()
        .map(|f| {
            let blob = std::fs::read(p.join(f))
                .map(|b| crate::git::blob_id(&b))
                .unwrap_or_default();
            (f.to_string(), blob)
        })
        .collect()
}

#[test]
fn files_not_as_mm_left_them_are_flagged() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("a.txt"), "by mm\n").unwrap();
    std::fs::write(p.join("c.txt"), "by mm too\n").unwrap();
    let made = made_now(p, &["a.txt", "c.txt"]);
    store.checkpoint(Kind::Turn, 2, "t2").unwrap();
    std::fs::write(p.join("b.txt"), "by the user, between turns\n").unwrap();
    // A file mm wrote, edited by the user afterwards: theirs now.
    std::fs::write(p.join("c.txt"), "by mm, then the user\n").unwrap();
    store.checkpoint(Kind::Turn, 3, "t3").unwrap();
    let plan = store.plan(c1, &made, &|_| Some(c1)).unwrap();
    let mut foreign = plan.foreign();
    foreign.sort();
    assert_eq!(foreign, vec!["b.txt", "c.txt"]);
}

#[test]
fn a_resumed_store_numbers_on_and_never_overwrites_a_ref() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("a.txt"), "turn 1\n").unwrap();
    let (c2, _) = store.checkpoint(Kind::Turn, 2, "t2").unwrap();
    drop(store);
    let mut again = Store::open_in(p, "s1", sh.path()).unwrap();
    again.resume_at(c2).unwrap();
    std::fs::write(p.join("a.txt"), "turn 3\n").unwrap();
    let (c3, _) = again.checkpoint(Kind::Turn, 3, "t3").unwrap();
    let refs = git(
        p,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/mm/",
        ],
    );
    assert!(
        refs.contains(&format!("refs/mm/checkpoints/s1/0001 {c1}")),
        "{refs}"
    );
    assert!(
        refs.contains(&format!("refs/mm/checkpoints/s1/0002 {c2}")),
        "{refs}"
    );
    assert!(
        refs.contains(&format!("refs/mm/checkpoints/s1/0003 {c3}")),
        "{refs}"
    );
    git(p, &["gc", "--prune=now", "--quiet"]);
    assert!(git(p, &["cat-file", "-t", &c1.to_string()]).contains("commit"));
}

#[test]
fn a_file_no_checkpoint_holds_is_never_overwritten() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("data.txt"), "small, by mm\n").unwrap();
    store.checkpoint(Kind::Turn, 2, "t2").unwrap();
    // The user grows it past the limit: no checkpoint can hold it.
    let huge = vec![b'y'; (MAX_FILE_BYTES + 1) as usize];
    std::fs::write(p.join("data.txt"), &huge).unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    assert_eq!(plan.unsaved(), vec!["data.txt"]);
    assert!(store.apply(&plan).is_err());
    assert_eq!(std::fs::read(p.join("data.txt")).unwrap(), huge);
}

#[test]
fn a_repository_without_commits_and_a_detached_head_work() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    git(p, &["init", "-q"]);
    std::fs::write(p.join("x.txt"), "x\n").unwrap();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("x.txt"), "changed\n").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(std::fs::read_to_string(p.join("x.txt")).unwrap(), "x\n");
    assert!(
        git(p, &["status", "--porcelain"]).contains("?? x.txt"),
        "the user's index stayed empty"
    );

    let d = repo();
    let p = d.path();
    let head = git(p, &["rev-parse", "HEAD"]);
    git(p, &["checkout", "-q", head.trim()]);
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "detached").unwrap();
    std::fs::write(p.join("a.txt"), "changed\n").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(git(p, &["status", "--porcelain"]), "");
}

#[test]
fn a_workspace_below_the_repository_root_only_rewinds_itself() {
    let d = repo();
    let p = d.path();
    std::fs::create_dir_all(p.join("app")).unwrap();
    std::fs::write(p.join("app/m.py"), "x = 1\n").unwrap();
    let sh = shadows();
    let mut store = Store::open_in(&p.join("app"), "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("app/m.py"), "x = 2\n").unwrap();
    std::fs::write(p.join("a.txt"), "outside the workspace\n").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    let paths: Vec<&str> = plan.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, vec!["m.py"]);
    store.apply(&plan).unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("app/m.py")).unwrap(),
        "x = 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("a.txt")).unwrap(),
        "outside the workspace\n"
    );
}

#[test]
fn outside_git_a_shadow_repository_keeps_the_checkpoints() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("notes.md"), "v1\n").unwrap();
    std::fs::create_dir_all(p.join(".mm/sessions")).unwrap();
    std::fs::write(p.join(".mm/sessions/x.jsonl"), "{}\n").unwrap();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    assert!(store.is_shadow());
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("notes.md"), "v2\n").unwrap();
    std::fs::write(p.join("extra.md"), "new\n").unwrap();
    std::fs::write(p.join(".mm/sessions/x.jsonl"), "{}\n{}\n").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(std::fs::read_to_string(p.join("notes.md")).unwrap(), "v1\n");
    assert!(!p.join("extra.md").exists());
    assert_eq!(
        std::fs::read_to_string(p.join(".mm/sessions/x.jsonl")).unwrap(),
        "{}\n{}\n",
        "mm's own files are left alone"
    );
    assert!(
        !p.join(".git").exists(),
        "no repository was created in the workspace"
    );
    // A second store (a later session) finds the same shadow repository.
    let again = Store::open_in(p, "s2", sh.path()).unwrap();
    assert!(again.is_shadow());
}

#[test]
fn prune_removes_other_sessions_refs() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut a = Store::open_in(p, "old", sh.path()).unwrap();
    a.checkpoint(Kind::Turn, 1, "t").unwrap();
    let mut b = Store::open_in(p, "new", sh.path()).unwrap();
    std::fs::write(p.join("a.txt"), "z\n").unwrap();
    b.checkpoint(Kind::Turn, 1, "t").unwrap();
    assert_eq!(b.prune(&["new"]).unwrap(), 1);
    let refs = git(p, &["for-each-ref", "refs/mm"]);
    assert!(
        refs.contains("refs/mm/checkpoints/new/") && !refs.contains("/old/"),
        "{refs}"
    );
}

#[test]
fn the_session_to_keep_is_the_one_with_the_newest_checkpoint_not_the_newest_name() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut a = Store::open_in(p, "29991231-000000-aaaaaa", sh.path()).unwrap();
    a.checkpoint(Kind::Turn, 1, "t").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut b = Store::open_in(p, "20200101-000000-bbbbbb", sh.path()).unwrap();
    std::fs::write(p.join("a.txt"), "z\n").unwrap();
    b.checkpoint(Kind::Turn, 1, "t").unwrap();
    assert_eq!(
        b.newest_session().unwrap().as_deref(),
        Some("20200101-000000-bbbbbb")
    );
}

#[test]
fn old_sessions_are_pruned_once_a_day() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut a = Store::open_in(p, "20200101-000000-aaaaaa", sh.path()).unwrap();
    a.checkpoint(Kind::Turn, 1, "t").unwrap();
    let b = Store::open_in(p, "20991231-000000-bbbbbb", sh.path()).unwrap();
    assert_eq!(b.prune_older_than(30).unwrap(), 1);
    // A second old session the same day stays until tomorrow's start.
    let mut c = Store::open_in(p, "20200102-000000-cccccc", sh.path()).unwrap();
    c.checkpoint(Kind::Turn, 1, "t").unwrap();
    assert_eq!(b.prune_older_than(30).unwrap(), 0);
    assert!(git(p, &["for-each-ref", "refs/mm"]).contains("/20200102-"));
    // Another day: it goes.
    // Nothing of mm's in the user's .git but refs.
    assert!(!p.join(".git/mm-pruned").exists());
    assert!(b.pruned_stamp().starts_with(sh.path()));
    std::fs::write(b.pruned_stamp(), "20200103").unwrap();
    assert_eq!(b.prune_older_than(30).unwrap(), 1);
    assert!(!git(p, &["for-each-ref", "refs/mm"]).contains("/20200102-"));
}

#[test]
fn binary_files_come_back_and_huge_ones_are_left_alone() {
    let d = repo();
    let p = d.path();
    std::fs::write(p.join("img.bin"), [0u8, 1, 2, 3, 255, 0, 7]).unwrap();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join("img.bin"), [9u8, 9, 0, 9]).unwrap();
    let huge = vec![b'x'; (MAX_FILE_BYTES + 1) as usize];
    std::fs::write(p.join("huge.dat"), &huge).unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    let paths: Vec<&str> = plan.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        vec!["img.bin"],
        "a file too big to snapshot is not planned"
    );
    assert!(plan.changes[0].binary);
    store.apply(&plan).unwrap();
    assert_eq!(
        std::fs::read(p.join("img.bin")).unwrap(),
        vec![0u8, 1, 2, 3, 255, 0, 7]
    );
    assert_eq!(
        std::fs::metadata(p.join("huge.dat")).unwrap().len(),
        MAX_FILE_BYTES + 1
    );
}

#[test]
fn a_merge_with_conflicts_is_checkpointed_without_touching_the_index() {
    let d = repo();
    let p = d.path();
    git(p, &["checkout", "-q", "-b", "other"]);
    std::fs::write(p.join("a.txt"), "other side\n").unwrap();
    git(p, &["commit", "-qam", "other"]);
    git(p, &["checkout", "-q", "main"]);
    std::fs::write(p.join("a.txt"), "main side\n").unwrap();
    git(p, &["commit", "-qam", "main"]);
    let merge = Command::new("git")
        .args(["merge", "-q", "other"])
        .current_dir(p)
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge should conflict");
    let index_before = std::fs::read(p.join(".git/index")).unwrap();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "during a merge").unwrap();
    let conflicted = std::fs::read_to_string(p.join("a.txt")).unwrap();
    std::fs::write(p.join("a.txt"), "resolved by mm\n").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("a.txt")).unwrap(),
        conflicted
    );
    assert_eq!(
        std::fs::read(p.join(".git/index")).unwrap(),
        index_before,
        "the conflicted index changed"
    );
    assert!(
        p.join(".git/MERGE_HEAD").exists(),
        "the merge is still in progress"
    );
    let err = store.commit_paths(&["a.txt".into()], "x").unwrap_err();
    assert!(err.to_string().contains("Merge"), "{err}");
}

/// The README: credential-shaped files are left out of checkpoints (no
/// object of the repository holds their text) and left alone by a rewind.
#[test]
fn credential_files_never_reach_a_checkpoint_and_a_rewind_leaves_them() {
    let d = repo();
    let p = d.path();
    for (name, text) in [
        (".env", "API=SECRET-ENV\n"),
        (".env.local", "API=SECRET-LOCAL\n"),
        ("server.pem", "SECRET-PEM\n"),
        ("deploy/id_rsa", "SECRET-KEY\n"),
        (".netrc", "machine x password SECRET-NETRC\n"),
    ] {
        std::fs::create_dir_all(p.join(name).parent().unwrap()).unwrap();
        std::fs::write(p.join(name), text).unwrap();
    }
    std::fs::write(p.join("notes.txt"), "kept\n").unwrap();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store
        .checkpoint(Kind::Turn, 1, "with secrets about")
        .unwrap();
    let all = git(
        p,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname) %(objecttype)",
        ],
    );
    let mut seen_notes = false;
    for line in all.lines() {
        let (id, kind) = line.split_once(' ').unwrap();
        if kind != "blob" {
            continue;
        }
        let blob = git(p, &["cat-file", "-p", id]);
        assert!(!blob.contains("SECRET"), "a checkpoint holds {blob:?}");
        seen_notes |= blob == "kept\n";
    }
    assert!(
        seen_notes,
        "the checkpoint did not take the ordinary new file"
    );
    // Changed after the checkpoint: a rewind puts notes.txt back and
    // leaves .env as it is now.
    std::fs::write(p.join(".env"), "API=CHANGED\n").unwrap();
    std::fs::write(p.join("notes.txt"), "changed\n").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("notes.txt")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join(".env")).unwrap(),
        "API=CHANGED\n"
    );
}

/// The README: `/commit` refuses during a rebase, as during a merge.
#[test]
fn a_commit_is_refused_in_the_middle_of_a_rebase() {
    let d = repo();
    let p = d.path();
    std::fs::write(p.join("a.txt"), "one\nmore\n").unwrap();
    git(p, &["commit", "-qam", "second"]);
    // Stop the rebase at its one commit, as `edit` does.
    git(
        p,
        &[
            "-c",
            "sequence.editor=sed -i s/^pick/edit/",
            "rebase",
            "-q",
            "-i",
            "HEAD~1",
        ],
    );
    assert!(
        p.join(".git/rebase-merge").is_dir(),
        "the rebase did not stop"
    );
    let sh = shadows();
    let store = Store::open_in(p, "s1", sh.path()).unwrap();
    std::fs::write(p.join("b.txt"), "changed by mm\n").unwrap();
    let head = git(p, &["rev-parse", "HEAD"]);
    let err = store.commit_paths(&["b.txt".into()], "x").unwrap_err();
    assert!(err.to_string().contains("Rebase"), "{err}");
    assert_eq!(git(p, &["rev-parse", "HEAD"]), head, "a commit was made");
}

#[test]
fn a_submodule_is_left_as_it_is() {
    let sub = repo();
    let d = repo();
    let p = d.path();
    let sub_path = sub.path().to_string_lossy().into_owned();
    git(
        p,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &sub_path,
            "vendor/sub",
        ],
    );
    git(p, &["commit", "-qm", "add sub"]);
    let before = user_state(p);
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "with a submodule").unwrap();
    // Work inside the submodule is its own repository's business.
    std::fs::write(p.join("vendor/sub/a.txt"), "changed inside\n").unwrap();
    std::fs::write(p.join("a.txt"), "edited\n").unwrap();
    store.checkpoint(Kind::Turn, 2, "edit").unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "one\n");
    assert_eq!(
        std::fs::read_to_string(p.join("vendor/sub/a.txt")).unwrap(),
        "changed inside\n",
        "a rewind does not reach into a submodule"
    );
    assert!(p.join("vendor/sub/.git").exists());
    assert_eq!(user_state(p), before);
}

#[test]
fn a_rewind_never_writes_through_a_symlink_that_leaves() {
    let d = repo();
    let p = d.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(p.join("dir")).unwrap();
    std::fs::write(p.join("dir/x.txt"), "inside\n").unwrap();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    // Since then `dir` became a link out of the workspace: going back
    // removes the link and writes the folder again, inside.
    std::fs::remove_dir_all(p.join("dir")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.join("dir")).unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    store.apply(&plan).unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("dir/x.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        !std::fs::symlink_metadata(p.join("dir"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // A link the checkpoints do not see (it is ignored) where a tracked
    // folder was: writing the folder's file back would go through it, so
    // the rewind stops before it writes anything there.
    let d = repo();
    let p = d.path();
    std::fs::create_dir(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/x.txt"), "tracked\n").unwrap();
    git(p, &["add", "sub/x.txt"]);
    git(p, &["commit", "-qm", "sub"]);
    std::fs::write(p.join(".gitignore"), "sub\n").unwrap();
    let mut store = Store::open_in(p, "s2", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::remove_dir_all(p.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.join("sub")).unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    assert!(
        plan.changes.iter().any(|c| c.path == "sub/x.txt"),
        "{:?}",
        plan.changes
    );
    let err = store.apply(&plan).unwrap_err();
    assert!(
        err.to_string().contains("the rewind stopped at sub/x.txt"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // Red-team round 14: an ignored link that stays inside the workspace
    // but leads into `.git/hooks`: the hook the checkpoint holds as
    // `a/pre-commit` is not written there.
    let d = repo();
    let p = d.path();
    std::fs::create_dir(p.join("a")).unwrap();
    std::fs::write(p.join("a/pre-commit"), "#!/bin/sh\ntouch pwned\n").unwrap();
    let mut store = Store::open_in(p, "s3", sh.path()).unwrap();
    let (c1, _) = store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    std::fs::write(p.join(".gitignore"), "a\n").unwrap();
    std::fs::remove_dir_all(p.join("a")).unwrap();
    std::fs::create_dir_all(p.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(".git/hooks", p.join("a")).unwrap();
    let plan = store.plan(c1, &HashMap::new(), &|_| Some(c1)).unwrap();
    let err = store.apply(&plan).unwrap_err();
    assert!(
        err.to_string()
            .contains("the rewind stopped at a/pre-commit"),
        "{err}"
    );
    assert!(
        !p.join(".git/hooks/pre-commit").exists(),
        "a hook was written"
    );
}

#[test]
fn a_planted_git_file_pointing_at_another_repository_is_not_followed() {
    let other = repo();
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("a.txt"), "x\n").unwrap();
    std::fs::write(
        p.join(".git"),
        format!("gitdir: {}\n", other.path().join(".git").display()),
    )
    .unwrap();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    assert!(
        store.is_shadow(),
        "checkpoints went into the other repository"
    );
    store.checkpoint(Kind::Turn, 1, "t1").unwrap();
    assert_eq!(git(other.path(), &["for-each-ref", "refs/mm"]), "");
}

#[test]
fn a_linked_worktree_is_its_own_repository() {
    let main = repo();
    let wt = tempfile::tempdir().unwrap();
    let at = wt.path().join("wt");
    git(
        main.path(),
        &["worktree", "add", "-q", at.to_str().unwrap()],
    );
    let sh = shadows();
    let store = Store::open_in(&at, "s1", sh.path()).unwrap();
    assert!(!store.is_shadow());
}

#[test]
fn a_commit_never_takes_a_file_through_a_link_out() {
    let d = repo();
    let p = d.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("hosts.yml"), "token: SECRET\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), p.join("cfg")).unwrap();
    let sh = shadows();
    let store = Store::open_in(p, "s1", sh.path()).unwrap();
    let err = store
        .commit_paths(&["cfg/hosts.yml".to_string()], "x")
        .unwrap_err();
    assert!(err.to_string().contains("not committed"), "{err}");
    assert!(!git(p, &["log", "--all", "--format=%s"]).contains('x'));
}

#[test]
fn the_gate_inspects_the_repository_git_itself_would_use() {
    let d = repo();
    let root = std::fs::canonicalize(d.path()).unwrap();
    // Layouts git treats differently from a plain walk up: a `.git`
    // folder with a HEAD git cannot read, one without objects, a nested
    // repository that is sound, a `.git` file.
    let layouts: &[(&str, &[(&str, &str)])] = &[
        (
            "garbage",
            &[
                ("HEAD", "garbage\n"),
                ("objects/.keep", ""),
                ("refs/.keep", ""),
            ],
        ),
        (
            "noobjects",
            &[("HEAD", "ref: refs/heads/main\n"), ("refs/.keep", "")],
        ),
        (
            "sound",
            &[
                ("HEAD", "ref: refs/heads/main\n"),
                ("objects/.keep", ""),
                ("refs/.keep", ""),
            ],
        ),
    ];
    for (name, files) in layouts {
        let sub = root.join(name);
        for (f, text) in *files {
            let p = sub.join(".git").join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let real = git(&sub, &["rev-parse", "--absolute-git-dir"]);
        let ours = git_would_open(&sub).unwrap();
        assert_eq!(
            std::fs::canonicalize(ours).unwrap(),
            std::path::PathBuf::from(real.trim()),
            "{name}"
        );
        // The gate either looked at that very repository or refuses.
        match inspect(&sub) {
            Ok(Some(facts)) => {
                let w = facts.workdir.map(|w| std::fs::canonicalize(w).unwrap());
                let want = std::fs::canonicalize(real.trim()).unwrap();
                assert_eq!(w.as_deref(), want.parent(), "{name}");
            }
            Ok(None) => panic!("{name}: no repository seen"),
            Err(e) => assert!(*name != "sound", "{name}: {e}"),
        }
    }
    // `objects` and `refs` as executable files: git's `access(X_OK)`
    // passes them, libgit2 does not. mm follows git, and the gate, whose
    // libgit2 looked elsewhere, refuses.
    {
        use std::os::unix::fs::PermissionsExt;
        let g = root.join("execs/.git");
        std::fs::create_dir_all(&g).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        for f in ["objects", "refs"] {
            std::fs::write(g.join(f), "").unwrap();
            std::fs::set_permissions(g.join(f), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let sub = root.join("execs");
        let real = git(&sub, &["rev-parse", "--absolute-git-dir"]);
        assert_eq!(
            std::fs::canonicalize(git_would_open(&sub).unwrap()).unwrap(),
            std::path::PathBuf::from(real.trim())
        );
        assert!(inspect(&sub).is_err());
    }
    std::fs::write(root.join("garbage/.git/HEAD"), "0123").unwrap();
    assert_eq!(
        git_would_open(&root.join("garbage")),
        Some(root.join(".git"))
    );
}

#[test]
fn many_new_files_go_into_one_pack_that_git_reads_and_a_rewind_removes() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    let (c0, _) = store.checkpoint(Kind::Turn, 1, "before").unwrap();
    for i in 0..(super::snapshot::BULK + 700) {
        let dir = p.join(format!("gen/d{}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    // Among them: a changed tracked file, a deleted one, an executable, a
    // symlink.
    std::fs::write(p.join("a.txt"), "changed\n").unwrap();
    std::fs::remove_file(p.join("b.txt")).unwrap();
    std::fs::write(p.join("gen/run.sh"), "#!/bin/sh\n").unwrap();
    let mut perm = std::fs::metadata(p.join("gen/run.sh"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(p.join("gen/run.sh"), perm).unwrap();
    std::os::unix::fs::symlink("run.sh", p.join("gen/link")).unwrap();
    let (c1, changed) = store.checkpoint(Kind::Command, 1, "made files").unwrap();
    assert!(changed);
    // The very tree git itself makes of the work tree.
    let scratch = tempfile::tempdir().unwrap();
    let index = scratch.path().join("index");
    let by_git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(p)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    by_git(&["add", "-A"]);
    let git_tree = by_git(&["write-tree"]);
    let ours = git(p, &["rev-parse", &format!("{c1}^{{tree}}")]);
    assert_eq!(ours.trim(), git_tree);
    let loose = |p: &Path| {
        std::fs::read_dir(p.join(".git/objects"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().len() == 2)
            .map(|e| std::fs::read_dir(e.path()).unwrap().count())
            .sum::<usize>()
    };
    assert!(
        loose(p) < super::snapshot::BULK + 50,
        "{} loose objects",
        loose(p)
    );
    let made = store.changes_between(c0, c1).unwrap();
    assert_eq!(made.len(), super::snapshot::BULK + 700 + 4);
    // git itself reads the checkpoint's tree and a blob from the pack.
    let listed = git(p, &["ls-tree", "-r", "--name-only", &c1.to_string()]);
    assert!(listed.lines().any(|l| l == "gen/d11/f1199.txt"), "{listed}");
    let blob = git(p, &["show", &format!("{c1}:gen/d0/f7.txt")]);
    assert_eq!(blob, "file 7\n");
    // The next snapshot, with nothing new, still works, and a rewind to
    // before removes every file.
    let (c2, changed) = store.checkpoint(Kind::Turn, 2, "again").unwrap();
    assert!(!changed);
    assert_eq!(c2, c1);
    let plan = store.plan(c0, &HashMap::new(), &|_| Some(c0)).unwrap();
    store.apply(&plan).unwrap();
    assert!(!p.join("gen/d0/f7.txt").exists());
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(p.join("b.txt")).unwrap(), "two\n");
}

/// Red-team round 24: `commondir`, `HEAD` or a `.git` file planted as a
/// link to `/dev/zero` (or a FIFO) made the git gate read without end
/// (2 GB before it failed). They are read only as small regular files.
#[test]
fn the_gate_reads_no_endless_git_file() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    for (name, link) in [("commondir", "commondir"), ("head", "HEAD")] {
        let g = root.join(name).join(".git");
        std::fs::create_dir_all(g.join("objects")).unwrap();
        std::fs::create_dir_all(g.join("refs")).unwrap();
        if link != "HEAD" {
            std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        std::os::unix::fs::symlink("/dev/zero", g.join(link)).unwrap();
    }
    let pointer = root.join("pointer");
    std::fs::create_dir_all(&pointer).unwrap();
    nix::unistd::mkfifo(&pointer.join(".git"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let base = root.to_path_buf();
    std::thread::spawn(move || {
        for name in ["commondir", "head", "pointer"] {
            let _ = git_would_open(&base.join(name));
            let _ = inspect(&base.join(name));
        }
        let _ = tx.send(());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the gate finished");
}

/// Red-team round 25: a `.git` file whose `gitdir:` path, or a
/// `commondir`, has a space after it names one repository to git (which
/// keeps the space) and another to libgit2 (which trims it). The gate
/// refuses such a repository instead of vouching for the harmless one.
#[test]
fn a_git_path_with_spaces_around_it_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let make_git_dir = |g: &Path| {
        std::fs::create_dir_all(g.join("objects")).unwrap();
        std::fs::create_dir_all(g.join("refs")).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    };
    let sub = root.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    make_git_dir(&root.join("sub/gd"));
    make_git_dir(&root.join("sub/gd "));
    std::fs::write(sub.join(".git"), "gitdir: gd \n").unwrap();
    assert!(
        inspect(&sub).is_err(),
        "{:?}",
        inspect(&sub).map(|f| f.is_some())
    );
    // As git reads it, without the space: the one repository.
    std::fs::write(sub.join(".git"), "gitdir: gd\n").unwrap();
    assert!(matches!(inspect(&sub), Ok(Some(_))));
    // A commondir with a space after it.
    let wt = root.join("wt");
    std::fs::create_dir_all(&wt).unwrap();
    let g = wt.join(".git");
    std::fs::create_dir_all(&g).unwrap();
    std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    make_git_dir(&wt.join("c"));
    std::fs::write(g.join("commondir"), "../c \n").unwrap();
    assert!(inspect(&wt).is_err());
}

/// A folder with a `.git` file that leads nowhere (planted by a command):
/// checkpoints go on, the folder's files kept as files.
#[test]
fn a_planted_git_file_does_not_stop_checkpoints() {
    let d = repo();
    let p = d.path();
    let sh = shadows();
    let mut store = Store::open_in(p, "s1", sh.path()).unwrap();
    std::fs::create_dir_all(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/.git"), "gitdir: nowhere\n").unwrap();
    std::fs::write(p.join("sub/x.txt"), "x\n").unwrap();
    std::fs::write(p.join("a.txt"), "changed\n").unwrap();
    let got = store.checkpoint(Kind::Turn, 1, "after");
    assert!(got.is_ok(), "{:?}", got.err());
}

#[test]
fn settings_whose_names_are_not_utf8_are_still_seen_and_info_attributes_is_noticed() {
    // `[diff "\xfe"] textconv = …` runs for git all the same (red-team
    // round 30); so does a line of `.git/info/attributes`.
    let d = repo();
    let p = d.path();
    let mut config = std::fs::read(p.join(".git/config")).unwrap();
    config.extend_from_slice(b"[diff \"\xfe\"]\n\ttextconv = touch /tmp/x\n");
    std::fs::write(p.join(".git/config"), config).unwrap();
    let facts = inspect(p).unwrap().unwrap();
    assert!(
        facts
            .settings
            .iter()
            .any(|(n, _)| n.starts_with("diff.") && n.ends_with(".textconv")),
        "{:?}",
        facts.settings
    );
    assert!(!facts.info_attributes);
    std::fs::create_dir_all(p.join(".git/info")).unwrap();
    std::fs::write(p.join(".git/info/attributes"), " \n\t\n").unwrap();
    assert!(!inspect(p).unwrap().unwrap().info_attributes);
    // A line that looks like a comment to Rust's trim, not to git.
    std::fs::write(p.join(".git/info/attributes"), "\u{a0}#*.txt diff=pdf\n").unwrap();
    assert!(inspect(p).unwrap().unwrap().info_attributes);
    std::fs::write(p.join(".git/info/attributes"), "*.txt diff=pdf\n").unwrap();
    assert!(inspect(p).unwrap().unwrap().info_attributes);
}
