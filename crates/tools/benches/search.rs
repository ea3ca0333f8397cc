//! Search speed: our in-process `grep`/`glob` against ripgrep on the same
//! 50,000-file tree.
//!
//! Run with `cargo bench -p openhands-tools --bench search`. Prints the median
//! of several warm runs for each engine; the ripgrep comparison is skipped
//! when `rg` is not installed. Set `SEARCH_BENCH_FILES` to change the tree
//! size.

#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks start the external programs they compare against"
)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::GrepTool;
use openhands_tools::glob::find_files;
use openhands_tools::grep::{build_matcher, search_files};
use openhands_tools::search::{NameFilter, StopSignals};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 7;
const FILES_PER_DIR: usize = 100;
const RG_TIMEOUT: Duration = Duration::from_secs(120);
/// Every `NEEDLE_EVERY`-th file contains the searched word.
const NEEDLE_EVERY: usize = 97;
const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "fn", "let", "struct", "impl",
];

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn build_tree(root: &Path, files: usize) -> (u64, usize) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut bytes = 0u64;
    let mut with_needle = 0;
    let exts = ["rs", "py", "ts", "md", "txt"];
    for i in 0..files {
        let dir = root.join(format!(
            "d{:03}/s{:02}",
            i / (FILES_PER_DIR * 10),
            (i / FILES_PER_DIR) % 10
        ));
        if i % FILES_PER_DIR == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let lines = 20 + (rng.next() % 40) as usize;
        let mut body = String::new();
        for l in 0..lines {
            for _ in 0..8 {
                body.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
                body.push(' ');
            }
            if i % NEEDLE_EVERY == 0 && l == lines / 2 {
                body.push_str("the Needle_Marker is here");
            }
            body.push('\n');
        }
        if i % NEEDLE_EVERY == 0 {
            with_needle += 1;
        }
        bytes += body.len() as u64;
        std::fs::write(dir.join(format!("f{i}.{}", exts[i % exts.len()])), body).unwrap();
    }
    (bytes, with_needle)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn time<F: FnMut() -> usize>(label: &str, mut f: F) -> (Duration, usize) {
    let count = f(); // warm-up (page cache, thread pools)
    let runs: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let n = f();
            assert_eq!(n, count, "{label}: result count changed between runs");
            t.elapsed()
        })
        .collect();
    let m = median(runs);
    println!(
        "{label:<44} {:>9.1} ms   ({count} files)",
        m.as_secs_f64() * 1000.0
    );
    (m, count)
}

/// Runs `rg` with a timeout; returns the number of output lines.
fn rg(args: &[&str], root: &Path) -> usize {
    let mut child = Command::new("rg")
        .args(args)
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rg");
    let stdout = child.stdout.take().expect("rg stdout");
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut out = Vec::new();
        let mut stdout = stdout;
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + RG_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("rg timed out");
            }
        }
    }
    let out = reader.join().expect("reader");
    out.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count()
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn ratio(ours: Duration, theirs: Duration) -> String {
    let r = ours.as_secs_f64() / theirs.as_secs_f64();
    let verdict = if r <= 1.5 {
        "within 1.5x"
    } else {
        "SLOWER than 1.5x"
    };
    format!("{r:.2}x of rg ({verdict})")
}

fn main() {
    let files: usize = std::env::var("SEARCH_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let t = Instant::now();
    let (bytes, needles) = build_tree(&root, files);
    println!(
        "tree: {files} files, {:.1} MB, {needles} contain the needle; built in {:.1} s; {} CPU(s)",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );

    let matcher = build_matcher("needle_marker").unwrap();
    let (grep_lib, n) = time("grep (library: search_files)", || {
        let (list, _truncated, total, early) =
            search_files(&root, &matcher, None, &StopSignals::default_deadline());
        assert!(!early);
        assert!(list.len() <= 100);
        total
    });
    assert_eq!(n, needles);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let (grep_tool, _) = time("grep (tool: parse + execute + JSON)", || {
        let serde_json::Value::Object(args) = json!({"pattern": "needle_marker"}) else {
            unreachable!()
        };
        let action = tool.parse_action(args).unwrap();
        let obs = runtime
            .block_on(tool.execute(action, &ToolCallContext::default()))
            .unwrap();
        obs["matches"].as_array().unwrap().len()
    });

    let filter = NameFilter::new("**/*.rs").unwrap();
    let (glob_lib, globbed) = time("glob (library: find_files **/*.rs)", || {
        let (_list, _t, total, _e) = find_files(&root, &filter, &StopSignals::default_deadline());
        total
    });

    if !rg_available() {
        println!("rg is not installed: skipping the ripgrep comparison (apt-get install ripgrep)");
        return;
    }
    let (rg_grep, rg_n) = time("rg -l -i needle_marker", || {
        rg(&["-l", "-i", "needle_marker"], &root)
    });
    assert_eq!(rg_n, needles, "rg and our grep disagree");
    let (rg_sorted, _) = time("rg -l -i --sortr=modified (reference's call)", || {
        rg(&["-l", "-i", "--sortr=modified", "needle_marker"], &root)
    });
    let (rg_glob, rg_g) = time("rg --files -g '**/*.rs'", || {
        rg(&["--files", "-g", "**/*.rs"], &root)
    });
    assert_eq!(rg_g, globbed, "rg and our glob disagree");

    println!();
    println!(
        "grep library vs rg -l -i:            {}",
        ratio(grep_lib, rg_grep)
    );
    println!(
        "grep tool    vs rg -l -i:            {}",
        ratio(grep_tool, rg_grep)
    );
    println!(
        "grep tool    vs rg --sortr=modified: {}",
        ratio(grep_tool, rg_sorted)
    );
    println!(
        "glob library vs rg --files -g:       {}",
        ratio(glob_lib, rg_glob)
    );
}
