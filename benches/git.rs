//! A checkpoint of a 10,000-file repository: the first one hashes every
//! file; later ones only stat them and hash what changed (target: 200 ms).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

use std::hint::black_box;
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};

use mm::git::{Kind, Store};

fn repo_with_files(n: usize) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for i in 0..n {
        let dir = d.path().join(format!("src/m{:03}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("pub fn f{i}() -> usize {{ {i} }}\n"),
        )
        .unwrap();
    }
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(d.path())
            .env("GIT_AUTHOR_NAME", "b")
            .env("GIT_AUTHOR_EMAIL", "b@b")
            .env("GIT_COMMITTER_NAME", "b")
            .env("GIT_COMMITTER_EMAIL", "b@b")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "init"]);
    d
}

fn checkpoints(c: &mut Criterion) {
    let d = repo_with_files(10_000);
    let shadows = tempfile::tempdir().unwrap();
    let mut store = Store::open_in(d.path(), "bench", shadows.path()).unwrap();
    let start = std::time::Instant::now();
    store.checkpoint(Kind::Turn, 1, "first").unwrap();
    eprintln!("first checkpoint of 10,000 files: {:?}", start.elapsed());
    let mut n = 0u64;
    let mut g = c.benchmark_group("git");
    g.sample_size(20);
    g.bench_function("checkpoint of a 10,000-file repo, one file changed", |b| {
        b.iter(|| {
            n += 1;
            std::fs::write(
                d.path().join("src/m000/f0.rs"),
                format!("pub fn f0() -> usize {{ {n} }}\n"),
            )
            .unwrap();
            black_box(store.checkpoint(Kind::Command, n, "bench").unwrap())
        });
    });
    g.bench_function("checkpoint of a 10,000-file repo, nothing changed", |b| {
        b.iter(|| black_box(store.checkpoint(Kind::Command, n, "bench").unwrap()));
    });
    g.finish();
}

criterion_group!(benches, checkpoints);
criterion_main!(benches);
