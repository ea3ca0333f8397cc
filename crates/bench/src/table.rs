//! The markdown rows of the suites that measure work against cost
//! (`--stored`, `--long`, `--live`): one row per point, each figure ours
//! then the reference's at the same point.

/// A figure with `digits` decimals; `–` when it is missing.
pub fn figure(value: Option<f64>, digits: usize) -> String {
    value.map_or("–".to_string(), |v| format!("{v:.digits$}"))
}

/// A byte count in MB with one decimal; `–` when it is missing.
pub fn megabytes(bytes: Option<u64>) -> String {
    figure(bytes.map(|b| b as f64 / 1e6), 1)
}

/// A markdown row per point of `ours`: its `key`, then each cell of `row`,
/// as `ours / reference` where `reference` has a point that is the `same`.
pub fn rows<P, const N: usize>(
    ours: &[P],
    reference: Option<&[P]>,
    key: impl Fn(&P) -> String,
    same: impl Fn(&P, &P) -> bool,
    row: impl Fn(&P) -> [String; N],
) -> String {
    let mut out = String::new();
    for p in ours {
        let mine = row(p);
        let theirs = reference
            .and_then(|points| points.iter().find(|q| same(p, q)))
            .map(&row);
        let cells: Vec<String> = match theirs {
            Some(t) => mine
                .into_iter()
                .zip(t)
                .map(|(a, b)| format!("{a} / {b}"))
                .collect(),
            None => mine.to_vec(),
        };
        out.push_str(&format!("| {} | {} |\n", key(p), cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_put_the_reference_beside_ours_at_the_same_point() {
        let ours = [(10, Some(1.26)), (100, None)];
        let reference = [(10, Some(30.0))];
        let row = |p: &(u32, Option<f64>)| [figure(p.1, 1), megabytes(Some(2_500_000))];
        let key = |p: &(u32, Option<f64>)| p.0.to_string();
        let same = |a: &(u32, Option<f64>), b: &(u32, Option<f64>)| a.0 == b.0;
        assert_eq!(
            rows(&ours, Some(&reference), key, same, row),
            "| 10 | 1.3 / 30.0 | 2.5 / 2.5 |\n| 100 | – | 2.5 |\n"
        );
        assert_eq!(
            rows(&ours[..1], None, key, same, row),
            "| 10 | 1.3 | 2.5 |\n"
        );
    }
}
