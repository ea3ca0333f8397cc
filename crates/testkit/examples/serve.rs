//! Serves a script file over HTTP until Ctrl-C:
//! `cargo run -p openhands-testkit --example serve -- SCRIPT.json [PORT]`.
//! Prints `MOCK_LLM_URL=<base url>` once listening.

use openhands_testkit::{MockLlmServer, Script};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: serve SCRIPT.json [PORT]");
        return ExitCode::from(2);
    };
    let port = match args.next().map(|p| p.parse::<u16>()) {
        None => 0,
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            eprintln!("bad port: {e}");
            return ExitCode::from(2);
        }
    };
    let script = match Script::from_path(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let served = MockLlmServer::serve_forever(script, port, |h| {
        println!("MOCK_LLM_URL={}", h.base_url());
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
