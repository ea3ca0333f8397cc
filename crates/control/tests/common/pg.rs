//! A PostgreSQL server for one test process, started from Debian's
//! `postgresql` package binaries (`/usr/lib/postgresql/<v>/bin`) in a
//! temporary directory on a free port. As root it runs as the `postgres`
//! user (PostgreSQL refuses root). It is stopped when the test process
//! ends, however it ends: a watchdog shell holds the server and stops it
//! when its standard input (a pipe from this process) closes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A running server.
pub struct PgServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: TempDir,
    _watchdog: std::sync::Mutex<Child>,
}

/// The directory of the PostgreSQL binaries, if installed.
pub fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file() && b.join("postgres").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn as_db_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--init-groups"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// The process-wide server, started on first use; `None` (with a loud
/// message) when PostgreSQL is not installed.
pub fn server() -> Option<&'static PgServer> {
    static SERVER: OnceLock<Option<PgServer>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let Some(bin) = bin_dir() else {
                eprintln!(
                    "\n*** SKIPPED: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb).\n\
                     *** scripts/test.sh installs it: apt-get install -y postgresql\n"
                );
                return None;
            };
            Some(start(&bin))
        })
        .as_ref()
}

fn start(bin: &Path) -> PgServer {
    let dir = tempfile::Builder::new()
        .prefix("ohctl-pg-")
        .tempdir()
        .unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    if is_root() {
        let uid = nix::unistd::User::from_name("postgres")
            .unwrap()
            .expect("a postgres user");
        for p in [dir.path(), data.as_path()] {
            nix::unistd::chown(p, Some(uid.uid), Some(uid.gid)).unwrap();
        }
    }
    let out = as_db_user(&bin.join("initdb"))
        .args(["-D"])
        .arg(&data)
        .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
        .output()
        .expect("running initdb");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut postgres = as_db_user(&bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-k"])
        .arg(dir.path())
        .args([
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=200",
        ]);
    let args: Vec<String> = std::iter::once(postgres.get_program())
        .chain(postgres.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy()))
        .collect();
    let log = dir.path().join("postgres.log");
    // The watchdog: runs the server, stops it when stdin closes.
    let script = format!(
        "{} >'{}' 2>&1 & pid=$!; read -r _; kill -INT $pid; wait $pid; rm -rf '{}'",
        args.join(" "),
        log.display(),
        dir.path().display()
    );
    let mut watchdog = Command::new("bash")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting postgres");
    let _ = watchdog.stdin.as_mut().map(|s| s.flush());
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-q"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ready {
            break;
        }
        assert!(
            Instant::now() < end,
            "postgres did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    PgServer {
        port,
        _dir: dir,
        _watchdog: std::sync::Mutex::new(watchdog),
    }
}

impl PgServer {
    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates a new empty database; returns its URL.
    pub async fn create_database(&self) -> String {
        use sqlx::Connection;
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .expect("connecting to the test postgres");
        let sql = format!("CREATE DATABASE {name}");
        sqlx::Executor::execute(&mut conn, sqlx::raw_sql(sqlx::AssertSqlSafe(sql)))
            .await
            .expect("CREATE DATABASE");
        let _ = conn.close().await;
        self.url(&name)
    }
}
