//! What the sandbox costs: setting one up (per conversation: probe cached,
//! control group created) and running one command to completion with and
//! without it. Run with `cargo bench -p openhands-workspace --bench sandbox`.

use openhands_workspace::exec::{
    EnvPolicy, ProcessSpec, RunEnd, RunLimits, Sandbox, SandboxConfig, run_to_completion,
};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let pick = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{name:<48} n={:<4} median={:>9.3?} p90={:>9.3?} min={:>9.3?}",
        v.len(),
        pick(0.5),
        pick(0.9),
        v[0],
    );
}

async fn command(sandbox: Option<&Sandbox>, dir: &std::path::Path) -> Duration {
    let spec = ProcessSpec::new("true", EnvPolicy::default().child_env())
        .cwd(dir)
        .sandbox(sandbox);
    let s = Instant::now();
    let out = run_to_completion(
        &spec,
        &RunLimits::default(),
        &CancellationToken::new(),
        1024,
    )
    .await
    .map(|o| o.end);
    let took = s.elapsed();
    if out.ok() != Some(RunEnd::Exited(0)) {
        println!("command failed");
    }
    took
}

async fn bench() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return println!("no temp dir: {e}"),
    };
    let ws = dir.path().join("ws");
    let hidden = vec![dir.path().join("data")];
    let _ = std::fs::create_dir_all(&hidden[0]);
    if let Err(e) = Sandbox::new(SandboxConfig::default(), &ws) {
        return println!("no sandbox here: {e}");
    }
    let mut setup = Vec::new();
    for _ in 0..50 {
        let s = Instant::now();
        let sb = Sandbox::with_hidden(SandboxConfig::default(), &ws, hidden.clone(), None);
        setup.push(s.elapsed());
        drop(sb);
    }
    stats("sandbox set-up per conversation (cgroup)", setup);
    let Ok(sb) = Sandbox::with_hidden(SandboxConfig::default(), &ws, hidden, None) else {
        return;
    };
    println!("limits by control group: {}", sb.has_cgroup());
    for (label, sandbox) in [("unsandboxed", None), ("sandboxed", Some(&sb))] {
        let _ = command(sandbox, &ws).await;
        let mut v = Vec::new();
        for _ in 0..100 {
            v.push(command(sandbox, &ws).await);
        }
        stats(&format!("`true` to completion, {label}"), v);
    }
}

fn main() {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(bench()),
        Err(e) => println!("no runtime: {e}"),
    }
}
