//! The comparison table: one row per metric with both servers' figures,
//! the ratio (how many times better ours is) and whether our goal is met.

use crate::results::ServerResult;
use serde::Serialize;

/// How a metric's value is shown.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Milliseconds (shown as s above one second).
    Ms,
    /// Bytes (shown as MB, 10^6 bytes).
    Bytes,
    /// A rate; the text is the unit shown after the number.
    PerSecond(&'static str),
    /// A factor (one figure divided by another), shown as `1.23×`.
    Times,
}

/// Which direction is better.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Smaller values are better (latency, memory).
    Lower,
    /// Larger values are better (throughput).
    Higher,
}

/// Our target for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// Our value must be below `limit` (in the metric's unit).
    Below {
        /// The bound (ms, bytes or per second).
        limit: f64,
        /// How the bound is written in the table.
        text: &'static str,
    },
    /// Our value must be at least `factor` times the reference's.
    TimesReference {
        /// The factor.
        factor: f64,
    },
}

/// One metric of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// What is measured.
    pub metric: String,
    /// Our figure.
    pub ours: Option<f64>,
    /// The reference's figure.
    pub reference: Option<f64>,
    /// Our attempts that failed (not in the figure).
    pub ours_failed: usize,
    /// The reference's attempts that failed (not in the figure).
    pub reference_failed: usize,
    /// Unit of both figures.
    pub unit: Unit,
    /// Which direction is better.
    pub better: Better,
    /// Our target, if any.
    pub goal: Option<Goal>,
}

/// Formats a value in its unit.
pub fn format_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Ms if v >= 1000.0 => format!("{:.2} s", v / 1000.0),
        Unit::Ms if v >= 100.0 => format!("{v:.0} ms"),
        Unit::Ms if v >= 10.0 => format!("{v:.1} ms"),
        Unit::Ms => format!("{v:.2} ms"),
        Unit::Bytes => format!("{:.1} MB", v / 1e6),
        Unit::PerSecond(u) if v >= 100.0 => format!("{v:.0} {u}"),
        Unit::PerSecond(u) => format!("{v:.2} {u}"),
        Unit::Times => format!("{v:.2}×"),
    }
}

impl Row {
    /// How many times better ours is (`reference / ours` when lower is
    /// better, `ours / reference` when higher is), when both are known and
    /// positive.
    pub fn ratio(&self) -> Option<f64> {
        let (o, r) = (self.ours?, self.reference?);
        if o <= 0.0 || r <= 0.0 {
            return None;
        }
        Some(match self.better {
            Better::Lower => r / o,
            Better::Higher => o / r,
        })
    }

    /// Whether the goal is met: `None` without a goal or when it cannot be
    /// judged (a factor goal without the reference's figure).
    pub fn goal_met(&self) -> Option<bool> {
        match self.goal? {
            Goal::Below { limit, .. } => Some(self.ours.is_some_and(|o| o < limit)),
            Goal::TimesReference { factor } => {
                self.reference?;
                Some(self.ratio().is_some_and(|r| r >= factor))
            }
        }
    }

    fn goal_cell(&self) -> String {
        let Some(goal) = self.goal else {
            return String::new();
        };
        let text = match goal {
            Goal::Below { text, .. } => format!("< {text}"),
            Goal::TimesReference { factor } => format!("≥ {factor:.0}× reference"),
        };
        match self.goal_met() {
            Some(true) => format!("yes ({text})"),
            Some(false) => format!("**no** ({text})"),
            None => format!("n/a ({text}; reference not run)"),
        }
    }

    fn cells(&self) -> [String; 5] {
        let show = |v: Option<f64>, failed: usize| {
            let mut text = v.map_or("–".to_string(), |v| format_value(v, self.unit));
            if failed > 0 {
                text.push_str(&format!(" ({failed} failed)"));
            }
            text
        };
        let ratio = self.ratio().map_or("–".to_string(), |r| {
            if r >= 100.0 {
                format!("{r:.0}×")
            } else {
                format!("{r:.1}×")
            }
        });
        [
            self.metric.clone(),
            show(self.ours, self.ours_failed),
            show(self.reference, self.reference_failed),
            ratio,
            self.goal_cell(),
        ]
    }
}

fn bytes(v: Option<u64>) -> Option<f64> {
    v.map(|b| b as f64)
}

type Pick = Box<dyn Fn(&ServerResult) -> Option<f64>>;
type Failures = Box<dyn Fn(&ServerResult) -> usize>;

/// How to build one row.
struct Spec {
    metric: String,
    pick: Pick,
    failures: Option<Failures>,
    unit: Unit,
    better: Better,
    goal: Option<Goal>,
}

impl Spec {
    fn new(
        metric: impl Into<String>,
        unit: Unit,
        better: Better,
        pick: impl Fn(&ServerResult) -> Option<f64> + 'static,
    ) -> Spec {
        Spec {
            metric: metric.into(),
            pick: Box::new(pick),
            failures: None,
            unit,
            better,
            goal: None,
        }
    }

    fn goal(mut self, goal: Goal) -> Spec {
        self.goal = Some(goal);
        self
    }

    fn failures(mut self, f: impl Fn(&ServerResult) -> usize + 'static) -> Spec {
        self.failures = Some(Box::new(f));
        self
    }

    fn row(&self, ours: &ServerResult, reference: Option<&ServerResult>) -> Row {
        let failed = |s: &ServerResult| self.failures.as_ref().map_or(0, |f| f(s));
        Row {
            metric: self.metric.clone(),
            ours: (self.pick)(ours),
            reference: reference.and_then(|r| (self.pick)(r)),
            ours_failed: failed(ours),
            reference_failed: reference.map_or(0, failed),
            unit: self.unit,
            better: self.better,
            goal: self.goal,
        }
    }
}

/// The rows comparing `ours` with `reference` (whose figures stay empty
/// when it was not run).
pub fn rows(ours: &ServerResult, reference: Option<&ServerResult>) -> Vec<Row> {
    use Better::{Higher, Lower};
    let below = |limit: f64, text: &'static str| Goal::Below { limit, text };
    let mut specs = vec![
        Spec::new("start → `/ready`", Unit::Ms, Lower, |s| s.ready_ms).goal(below(100.0, "100 ms")),
        Spec::new("idle RSS", Unit::Bytes, Lower, |s| bytes(s.idle_rss_bytes))
            .goal(below(30e6, "30 MB")),
        Spec::new(
            format!("RSS after {} conversations", ours.conversations),
            Unit::Bytes,
            Lower,
            |s| bytes(s.rss_after_conversations_bytes),
        ),
        Spec::new("create conversation p50", Unit::Ms, Lower, |s| {
            s.create.as_ref().map(|c| c.p50_ms)
        })
        .goal(below(3.0, "3 ms"))
        .failures(|s| s.create_failures),
        Spec::new("create conversation p99", Unit::Ms, Lower, |s| {
            s.create.as_ref().map(|c| c.p99_ms)
        })
        .failures(|s| s.create_failures),
        Spec::new("two-step run p50", Unit::Ms, Lower, |s| {
            s.run.as_ref().map(|c| c.p50_ms)
        })
        .goal(below(30.0, "30 ms"))
        .failures(|s| s.run_failures),
        Spec::new("two-step run p99", Unit::Ms, Lower, |s| {
            s.run.as_ref().map(|c| c.p99_ms)
        })
        .failures(|s| s.run_failures),
        Spec::new(
            "… of which terminal step p50 (`echo hi`)",
            Unit::Ms,
            Lower,
            |s| s.run_terminal_step.as_ref().map(|c| c.p50_ms),
        ),
    ];
    for t in &ours.throughput {
        let c = t.concurrency;
        let level =
            move |s: &ServerResult| s.throughput.iter().find(|x| x.concurrency == c).cloned();
        specs.push(
            Spec::new(
                format!("throughput, {c} concurrent conversations"),
                Unit::PerSecond("conv/s"),
                Higher,
                move |s| {
                    level(s)
                        .filter(|x| x.finished > 0)
                        .map(|x| x.conversations_per_s)
                },
            )
            .goal(Goal::TimesReference { factor: 20.0 })
            .failures(move |s| level(s).map_or(0, |x| x.attempted - x.finished)),
        );
    }
    if let Some(c) = ours.throughput.iter().map(|t| t.concurrency).max() {
        let health = move |s: &ServerResult| {
            s.throughput
                .iter()
                .find(|x| x.concurrency == c)
                .and_then(|x| x.health.clone())
        };
        specs.extend([
            Spec::new(
                format!("`/health` p50 during {c} concurrent conversations"),
                Unit::Ms,
                Lower,
                move |s| health(s)?.latency.map(|l| l.p50_ms),
            )
            .failures(move |s| health(s).map_or(0, |h| h.failures)),
            Spec::new(
                format!("`/health` p99 during {c} concurrent conversations"),
                Unit::Ms,
                Lower,
                move |s| health(s)?.latency.map(|l| l.p99_ms),
            )
            .goal(below(20.0, "20 ms"))
            .failures(move |s| health(s).map_or(0, |h| h.failures)),
        ]);
    }
    let subs = ours.fanout.as_ref().map_or(0, |f| f.subscribers);
    specs.extend([
        Spec::new(
            format!("WebSocket fan-out to {subs} subscribers p50"),
            Unit::Ms,
            Lower,
            |s| s.fanout.as_ref()?.latency.as_ref().map(|l| l.p50_ms),
        ),
        Spec::new(
            format!("WebSocket fan-out to {subs} subscribers p99"),
            Unit::Ms,
            Lower,
            |s| s.fanout.as_ref()?.latency.as_ref().map(|l| l.p99_ms),
        ),
        Spec::new(
            format!("WebSocket fan-out rate, {subs} subscribers"),
            Unit::PerSecond("events/s"),
            Higher,
            |s| s.fanout.as_ref().map(|f| f.deliveries_per_s),
        ),
        Spec::new("RSS at the end", Unit::Bytes, Lower, |s| {
            bytes(s.rss_end_bytes)
        }),
        Spec::new("RSS at the end ÷ idle RSS", Unit::Times, Lower, |s| {
            let (end, idle) = (s.rss_end_bytes?, s.idle_rss_bytes?);
            (idle > 0).then(|| end as f64 / idle as f64)
        })
        .goal(below(2.0, "2×")),
    ]);
    specs.iter().map(|s| s.row(ours, reference)).collect()
}

/// The rows as a markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| metric | ours | reference | ratio | goal met? |\n|---|---:|---:|---:|---|\n",
    );
    for row in rows {
        out.push_str(&format!("| {} |\n", row.cells().join(" | ")));
    }
    out
}

/// Notes under the table: failures and errors of each server.
pub fn notes(results: &[&ServerResult]) -> String {
    let mut out = String::new();
    for r in results {
        let throughput_failed: usize = r.throughput.iter().map(|t| t.attempted - t.finished).sum();
        let polled: usize = r.runs_observed_by_polling
            + r.throughput
                .iter()
                .map(|t| t.observed_by_polling)
                .sum::<usize>();
        out.push_str(&format!(
            "- {}{}: {} failed creations, {} failed runs, {} failed throughput conversations, {} runs observed by polling, {} left-over processes killed at stop\n",
            r.label,
            r.version.as_ref().map(|v| format!(" ({v})")).unwrap_or_default(),
            r.create_failures,
            r.run_failures,
            throughput_failed,
            polled,
            r.leftover_processes_killed,
        ));
        for e in &r.errors {
            let first = e.lines().next().unwrap_or_default();
            out.push_str(&format!("  - {}: {first}\n", r.label));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{HealthFigures, Throughput};
    use crate::stats::Summary;

    fn summary(p50: f64, p99: f64) -> Option<Summary> {
        Some(Summary {
            n: 10,
            p50_ms: p50,
            p90_ms: p99,
            p99_ms: p99,
            min_ms: p50,
            max_ms: p99,
            mean_ms: p50,
        })
    }

    fn result(label: &str, scale: f64, rate: f64) -> ServerResult {
        ServerResult {
            label: label.into(),
            ready_ms: Some(10.0 * scale),
            idle_rss_bytes: Some((10e6 * scale) as u64),
            conversations: 100,
            rss_after_conversations_bytes: Some((12e6 * scale) as u64),
            create: summary(1.0 * scale, 2.0 * scale),
            run: summary(20.0 * scale, 40.0 * scale),
            throughput: vec![Throughput {
                concurrency: 5,
                attempted: 10,
                finished: 10,
                rounds: 1,
                wall_s: 1.0,
                conversations_per_s: rate,
                per_conversation: None,
                observed_by_polling: 0,
                health: Some(HealthFigures {
                    latency: summary(2.0 * scale, 8.0 * scale),
                    failures: 0,
                }),
            }],
            rss_end_bytes: Some((15e6 * scale * scale) as u64),
            ..ServerResult::default()
        }
    }

    #[test]
    fn values_are_formatted_in_their_unit() {
        assert_eq!(format_value(0.4213, Unit::Ms), "0.42 ms");
        assert_eq!(format_value(12.34, Unit::Ms), "12.3 ms");
        assert_eq!(format_value(523.4, Unit::Ms), "523 ms");
        assert_eq!(format_value(13_840.0, Unit::Ms), "13.84 s");
        assert_eq!(format_value(343_128.0 * 1024.0, Unit::Bytes), "351.4 MB");
        assert_eq!(
            format_value(1.4213, Unit::PerSecond("conv/s")),
            "1.42 conv/s"
        );
        assert_eq!(
            format_value(1234.5, Unit::PerSecond("events/s")),
            "1234 events/s"
        );
        assert_eq!(format_value(1.5, Unit::Times), "1.50×");
    }

    #[test]
    fn ratio_is_how_many_times_better_ours_is() {
        let lower = Row {
            metric: "x".into(),
            ours: Some(10.0),
            reference: Some(1000.0),
            ours_failed: 0,
            reference_failed: 0,
            unit: Unit::Ms,
            better: Better::Lower,
            goal: None,
        };
        assert_eq!(lower.ratio(), Some(100.0));
        let higher = Row {
            better: Better::Higher,
            ours: Some(30.0),
            reference: Some(1.5),
            ..lower.clone()
        };
        assert_eq!(higher.ratio(), Some(20.0));
        let missing = Row {
            reference: None,
            ..lower
        };
        assert_eq!(missing.ratio(), None);
    }

    #[test]
    fn goals_are_judged_honestly() {
        let ours = result("ours", 1.0, 30.0);
        let reference = result("reference", 100.0, 1.0);
        let rows = rows(&ours, Some(&reference));
        let row = |name: &str| rows.iter().find(|r| r.metric.starts_with(name)).unwrap();
        assert_eq!(row("start").goal_met(), Some(true)); // 10 ms < 100 ms
        assert_eq!(row("idle RSS").goal_met(), Some(true)); // 10 MB < 30 MB
        assert_eq!(row("create conversation p50").goal_met(), Some(true)); // 1 ms < 3 ms
        assert_eq!(row("create conversation p99").goal_met(), None);
        assert_eq!(row("two-step run p50").goal_met(), Some(true)); // 20 ms < 30 ms
        assert_eq!(row("throughput, 5").goal_met(), Some(true)); // 30×
        assert_eq!(row("`/health` p50 during 5").goal_met(), None);
        assert_eq!(row("`/health` p99 during 5").goal_met(), Some(true)); // 8 ms
        assert_eq!(row("RSS at the end ÷").ours, Some(1.5));
        assert_eq!(row("RSS at the end ÷").goal_met(), Some(true)); // 1.5×

        let slow = result("ours", 6.0, 19.0);
        let rows = super::rows(&slow, Some(&reference));
        let row = |name: &str| rows.iter().find(|r| r.metric.starts_with(name)).unwrap();
        assert_eq!(row("start").goal_met(), Some(true)); // 60 ms
        assert_eq!(row("idle RSS").goal_met(), Some(false)); // 60 MB
        assert_eq!(row("create conversation p50").goal_met(), Some(false)); // 6 ms
        assert_eq!(row("two-step run p50").goal_met(), Some(false)); // 120 ms
        assert_eq!(row("throughput, 5").goal_met(), Some(false)); // 19×
        assert_eq!(row("`/health` p99 during 5").goal_met(), Some(false)); // 48 ms
        assert_eq!(row("RSS at the end ÷").goal_met(), Some(false)); // 9×

        let alone = super::rows(&ours, None);
        let tp = alone
            .iter()
            .find(|r| r.metric.starts_with("throughput"))
            .unwrap();
        assert_eq!(tp.goal_met(), None);
        assert!(tp.goal_cell().starts_with("n/a"));
    }

    #[test]
    fn missing_figure_fails_an_absolute_goal() {
        let mut ours = result("ours", 1.0, 1.0);
        ours.run = None;
        let rows = rows(&ours, None);
        let run = rows
            .iter()
            .find(|r| r.metric == "two-step run p50")
            .unwrap();
        assert_eq!(run.goal_met(), Some(false));
        assert_eq!(run.cells()[1], "–");
    }

    #[test]
    fn markdown_table_has_a_header_and_one_line_per_row() {
        let ours = result("ours", 1.0, 30.0);
        let reference = result("reference", 100.0, 1.0);
        let rows = rows(&ours, Some(&reference));
        let table = markdown(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| metric | ours | reference | ratio | goal met? |"
        );
        assert_eq!(lines.len(), rows.len() + 2);
        assert_eq!(
            lines[2],
            "| start → `/ready` | 10.0 ms | 1.00 s | 100× | yes (< 100 ms) |"
        );
        assert!(table.contains("| throughput, 5 concurrent conversations | 30.00 conv/s | 1.00 conv/s | 30.0× | yes (≥ 20× reference) |"));
        assert!(lines.iter().all(|l| l.starts_with('|') && l.ends_with('|')));
    }

    #[test]
    fn failed_attempts_are_shown_next_to_the_figure() {
        let ours = result("ours", 1.0, 30.0);
        let mut reference = result("reference", 100.0, 1.0);
        reference.throughput[0].finished = 4;
        reference.run_failures = 1;
        let rows = rows(&ours, Some(&reference));
        let tp = rows
            .iter()
            .find(|r| r.metric.starts_with("throughput"))
            .unwrap();
        assert_eq!(tp.cells()[2], "1.00 conv/s (6 failed)");
        assert_eq!(tp.cells()[1], "30.00 conv/s");
        let run = rows
            .iter()
            .find(|r| r.metric == "two-step run p50")
            .unwrap();
        assert_eq!(run.cells()[2], "2.00 s (1 failed)");
    }

    #[test]
    fn notes_list_failures_and_first_error_lines() {
        let mut r = result("reference", 1.0, 1.0);
        r.run_failures = 2;
        r.errors.push("run: timed out\nmore detail".into());
        let text = notes(&[&r]);
        assert!(text.contains("2 failed runs"), "{text}");
        assert!(text.contains("  - reference: run: timed out\n"), "{text}");
        assert!(!text.contains("more detail"));
    }
}
