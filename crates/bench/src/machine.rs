//! A description of the machine the figures were taken on.

use serde::Serialize;

/// Date, CPUs, memory and kernel.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// UTC date and time of the run (RFC 3339).
    pub date: String,
    /// CPUs available to this process.
    pub cpus: usize,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// Total memory in bytes from `/proc/meminfo`.
    pub memory_bytes: Option<u64>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// 1, 5 and 15-minute load averages when the run started (other work
    /// on the machine weighs on the figures).
    pub load_average: Option<String>,
}

/// The `model name` of the first CPU in a `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string())
    })
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
pub fn mem_total(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemTotal:")?;
        rest.split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
            .map(|kb| kb * 1024)
    })
}

impl Machine {
    /// Describes this machine now.
    pub fn current() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        Machine {
            date: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model: read("/proc/cpuinfo").as_deref().and_then(cpu_model),
            memory_bytes: read("/proc/meminfo").as_deref().and_then(mem_total),
            kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
            load_average: read("/proc/loadavg")
                .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
        }
    }

    /// One line: `2026-01-01T00:00:00Z, 2 CPUs (AMD EPYC), 24 GB RAM, Linux 6.1, load average …`.
    pub fn summary(&self) -> String {
        let mut s = format!("{}, {} CPUs", self.date, self.cpus);
        if let Some(m) = &self.cpu_model {
            s.push_str(&format!(" ({m})"));
        }
        if let Some(b) = self.memory_bytes {
            s.push_str(&format!(", {:.0} GB RAM", b as f64 / 1e9));
        }
        if let Some(k) = &self.kernel {
            s.push_str(&format!(", Linux {k}"));
        }
        if let Some(l) = &self.load_average {
            s.push_str(&format!(", load average {l} at start"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpuinfo_and_meminfo() {
        let cpu =
            "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nmodel\t: 1\n";
        assert_eq!(cpu_model(cpu).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor : 0\n"), None);
        assert_eq!(
            mem_total("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24_576_000 * 1024)
        );
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn summary_mentions_the_cpus() {
        let m = Machine {
            date: "2026-01-01T00:00:00Z".into(),
            cpus: 2,
            cpu_model: Some("AMD EPYC".into()),
            memory_bytes: Some(24_000_000_000),
            kernel: Some("6.1".into()),
            load_average: Some("0.50 0.40 0.30".into()),
        };
        assert_eq!(
            m.summary(),
            "2026-01-01T00:00:00Z, 2 CPUs (AMD EPYC), 24 GB RAM, Linux 6.1, load average 0.50 0.40 0.30 at start"
        );
    }
}
