//! Resident memory of a process, from `/proc/<pid>/status` (Linux).

use std::io;

/// The `field` line (e.g. `VmRSS`) of a `/proc/<pid>/status` text, in kB.
///
/// `None` when the line is missing (a kernel thread or a zombie has none)
/// or malformed.
fn parse_status_kb(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        let mut parts = rest.split_whitespace();
        let value = parts.next()?.parse::<u64>().ok()?;
        match parts.next() {
            Some("kB") | None => Some(value),
            Some(_) => None,
        }
    })
}

/// The `field` of `pid`'s status in bytes.
fn status_bytes(pid: u32, field: &str) -> io::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_status_kb(&text, field)
        .map(|kb| kb * 1024)
        .ok_or_else(|| io::Error::other(format!("/proc/{pid}/status has no {field} line")))
}

/// The resident set size of `pid` in bytes.
pub fn rss_bytes(pid: u32) -> io::Result<u64> {
    status_bytes(pid, "VmRSS")
}

/// The anonymous part of `pid`'s resident set in bytes (`RssAnon`: heap
/// and stacks, leaving out the program's own pages, of which the kernel
/// maps more the more of the file is in the page cache).
pub fn anon_rss_bytes(pid: u32) -> io::Result<u64> {
    status_bytes(pid, "RssAnon")
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tpython\nUmask:\t0022\nState:\tS (sleeping)\n\
        VmPeak:\t  900000 kB\nVmHWM:\t  360000 kB\nVmRSS:\t  343128 kB\nRssAnon:\t  300000 kB\n";

    #[test]
    fn reads_vm_rss_not_its_neighbours() {
        assert_eq!(parse_status_kb(STATUS, "VmRSS"), Some(343_128));
        assert_eq!(parse_status_kb(STATUS, "RssAnon"), Some(300_000));
        assert_eq!(
            parse_status_kb(STATUS, "Rss"),
            None,
            "a prefix is not a field"
        );
    }

    #[test]
    fn missing_or_malformed_line_is_none() {
        assert_eq!(
            parse_status_kb("Name:\tkthreadd\nState:\tS\n", "VmRSS"),
            None
        );
        assert_eq!(parse_status_kb("VmRSS:\tlots kB\n", "VmRSS"), None);
        assert_eq!(parse_status_kb("VmRSS:\t12 MB\n", "VmRSS"), None);
        assert_eq!(parse_status_kb("", "VmRSS"), None);
    }

    #[test]
    fn own_process_has_a_plausible_rss() {
        let bytes = rss_bytes(std::process::id()).unwrap();
        assert!(bytes > 100 * 1024, "{bytes}");
        assert!(bytes < 64 * 1024 * 1024 * 1024, "{bytes}");
    }

    #[test]
    fn missing_process_is_an_error() {
        // PIDs are below 2^22 on Linux.
        assert!(rss_bytes(u32::MAX - 1).is_err());
    }
}
