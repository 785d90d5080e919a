//! Wiring only: parse flags, build the runtime, hand over to `launch`.

use std::process::ExitCode;

fn main() -> ExitCode {
    // reqwest is built without a default TLS provider (ring builds in a
    // fraction of aws-lc's time); without this call the client panics.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = mm::cli::Cli::parse_args();
    mm::sandbox::procs::watch_exit_signals(mm::tui::restore_if_entered);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mm: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let acp = mm::launch::AcpEntry {
        serve: |rt, root| Box::pin(mm::acp::serve(rt, root)),
        unavailable: |settings, why| Box::pin(mm::acp::serve_unavailable(settings, why)),
    };
    let code = runtime.block_on(mm::launch::run(cli, acp));
    // Nothing mm started outlives it, whatever path led here; a blocking
    // thread stuck in a read does not keep it from ending.
    mm::sandbox::procs::kill_all();
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
