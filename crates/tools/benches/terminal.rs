//! Terminal tool figures: session start (eager and lazy), warm `echo hi`
//! round trip, and a 10 MB output. Run with
//! `cargo bench -p openhands-tools --bench terminal`.

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::terminal::{TerminalAction, TerminalOptions, TerminalTool};
use std::time::{Duration, Instant};

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let pick = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{name:<44} n={:<4} median={:>9.3?} p90={:>9.3?} min={:>9.3?} max={:>9.3?}",
        v.len(),
        pick(0.5),
        pick(0.9),
        v[0],
        v[v.len() - 1]
    );
}

fn options(load_bashrc: bool) -> TerminalOptions {
    TerminalOptions {
        load_bashrc,
        ..Default::default()
    }
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

async fn bench() {
    let dir = std::env::temp_dir();
    let env = ToolEnv::new(&dir);
    let ctx = ToolCallContext::default();

    // Without rc files; with ~/.bashrc from a shell snapshot (the default;
    // the first start captures it); with ~/.bashrc sourced by every shell.
    for (load_bashrc, snapshot) in [(false, true), (true, true), (true, false)] {
        let label = match (load_bashrc, snapshot) {
            (false, _) => "no rc",
            (true, true) => "~/.bashrc, snapshot",
            (true, false) => "~/.bashrc, sourced",
        };
        let mut env = ToolEnv::new(&dir);
        env.exec.shell_snapshot = snapshot;
        let mut eager = Vec::new();
        let mut lazy = Vec::new();
        for _ in 0..20 {
            let t = TerminalTool::with_options(&env, options(load_bashrc));
            let s = Instant::now();
            if let Err(e) = t.start().await {
                println!("start failed: {e}");
                return;
            }
            eager.push(s.elapsed());
            t.close().await;

            let t = TerminalTool::with_options(&env, options(load_bashrc));
            let s = Instant::now();
            let o = t.run(&TerminalAction::command("true"), &ctx).await;
            lazy.push(s.elapsed());
            assert_eq!(o.exit_code, Some(0));
            t.close().await;
        }
        stats(&format!("session start, eager start() ({label})"), eager);
        stats(&format!("first command on lazy session ({label})"), lazy);
    }

    let t = TerminalTool::with_options(&env, options(false));
    let _ = t.run(&TerminalAction::command("true"), &ctx).await;
    let mut rt = Vec::new();
    for _ in 0..300 {
        let s = Instant::now();
        let o = t.run(&TerminalAction::command("echo hi"), &ctx).await;
        rt.push(s.elapsed());
        assert_eq!(o.text(), "hi");
    }
    stats("warm round trip `echo hi`", rt);

    // The same in a sandbox (bubblewrap; skipped where it cannot run).
    let mut boxed = ToolEnv::new(&dir);
    match openhands_workspace::exec::Sandbox::new(Default::default(), &dir) {
        Ok(sb) => {
            boxed.exec.sandbox = Some(sb);
            let mut start = Vec::new();
            for _ in 0..20 {
                let t = TerminalTool::with_options(&boxed, options(false));
                let s = Instant::now();
                if let Err(e) = t.start().await {
                    println!("sandboxed start failed: {e}");
                    break;
                }
                start.push(s.elapsed());
                t.close().await;
            }
            if !start.is_empty() {
                stats("session start, eager start() (no rc, sandboxed)", start);
            }
            let t = TerminalTool::with_options(&boxed, options(false));
            let _ = t.run(&TerminalAction::command("true"), &ctx).await;
            let mut rt = Vec::new();
            for _ in 0..300 {
                let s = Instant::now();
                let o = t.run(&TerminalAction::command("echo hi"), &ctx).await;
                rt.push(s.elapsed());
                assert_eq!(o.text(), "hi");
            }
            stats("warm round trip `echo hi` (sandboxed)", rt);
            let mut ext = Vec::new();
            for _ in 0..100 {
                let s = Instant::now();
                let o = t.run(&TerminalAction::command("/bin/true"), &ctx).await;
                ext.push(s.elapsed());
                assert_eq!(o.exit_code, Some(0));
            }
            stats("warm round trip `/bin/true` (sandboxed)", ext);
            t.close().await;
        }
        Err(e) => println!("no sandbox here: {e}"),
    }
    let mut ext = Vec::new();
    for _ in 0..100 {
        let s = Instant::now();
        let o = t.run(&TerminalAction::command("/bin/true"), &ctx).await;
        ext.push(s.elapsed());
        assert_eq!(o.exit_code, Some(0));
    }
    stats("warm round trip `/bin/true`", ext);

    let mut close = Vec::new();
    for _ in 0..10 {
        let t2 = TerminalTool::with_options(&env, options(false));
        let _ = t2.run(&TerminalAction::command("sleep 1000 &"), &ctx).await;
        let s = Instant::now();
        t2.close().await;
        close.push(s.elapsed());
    }
    stats("close() with a background `sleep 1000 &`", close);

    let before = peak_rss_kib();
    let mut big = Vec::new();
    for _ in 0..3 {
        let s = Instant::now();
        let o = t
            .run(&TerminalAction::command("yes | head -c 10000000"), &ctx)
            .await;
        big.push(s.elapsed());
        assert_eq!(o.exit_code, Some(0));
        if let Some(d) = &o.full_output_save_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    stats("10 MB of output (`yes | head -c 10000000`)", big);
    println!(
        "peak RSS of the bench process: {} KiB before, {} KiB after the 10 MB runs",
        before,
        peak_rss_kib()
    );
    t.close().await;
}

fn main() {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot build runtime: {e}");
            return;
        }
    };
    rt.block_on(async {
        if tokio::time::timeout(Duration::from_secs(600), bench())
            .await
            .is_err()
        {
            eprintln!("bench timed out");
        }
    });
}
