//! What the fence costs a command: `sh -c true` started as the bash tool
//! starts it, outside the fence and inside it (read-only, and with the
//! workspace writable; with and without the network; unasked code in a
//! 5,000-file workspace, which is walked first). Target: at most
//! 15 ms more per command (issue 9). Skipped where bwrap cannot start.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

use mm::config::SandboxMode;
use mm::sandbox::{Access, Fence, RunPlan, Sandbox};

fn run(sb: &Sandbox, rt: &tokio::runtime::Runtime, plan: RunPlan) {
    rt.block_on(async {
        let mut cmd = sb.command("/bin/sh", &["-c", "true"], sb.root(), plan);
        let status = cmd.status().await.unwrap();
        assert!(status.success());
    });
}

fn fence(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fence = rt.block_on(Fence::detect());
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::with_fence(dir.path(), SandboxMode::Workspace, fence, true).unwrap();
    let mut g = c.benchmark_group("fence");
    g.sample_size(30).measurement_time(Duration::from_secs(5));
    let plan = |access, net| RunPlan {
        access,
        net,
        git_guard: false,
    };
    g.bench_function("sh -c true, no fence", |b| {
        b.iter(|| run(&sb, &rt, plan(None, true)));
    });
    if sb.fence().is_on() {
        g.bench_function("sh -c true, fence, read-only", |b| {
            b.iter(|| run(&sb, &rt, plan(Some(Access::Listed), true)));
        });
        g.bench_function("sh -c true, fence, workspace writable", |b| {
            b.iter(|| run(&sb, &rt, plan(Some(Access::Workspace), true)));
        });
        g.bench_function("sh -c true, fence, no network", |b| {
            b.iter(|| run(&sb, &rt, plan(Some(Access::Workspace), false)));
        });
        // Unasked code gets a walk of the workspace (credential files,
        // hard links, nested `.mm`): 5,000 files in 100 folders.
        let big = tempfile::tempdir().unwrap();
        for d in 0..100 {
            let dir = big.path().join(format!("pkg{d}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..50 {
                std::fs::write(dir.join(format!("m{f}.py")), "x = 1\n").unwrap();
            }
        }
        std::fs::write(big.path().join("pkg7/.env"), "K=1\n").unwrap();
        let fence = rt.block_on(Fence::detect());
        let sb = Sandbox::with_fence(big.path(), SandboxMode::Workspace, fence, true).unwrap();
        g.bench_function("sh -c true, fence, unasked, 5,000-file workspace", |b| {
            b.iter(|| run(&sb, &rt, plan(Some(Access::Project), false)));
        });
    } else {
        eprintln!("fence: bwrap cannot start here; only the unfenced figure is measured");
    }
    g.finish();
}

criterion_group!(benches, fence);
criterion_main!(benches);
