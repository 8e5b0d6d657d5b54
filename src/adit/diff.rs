//! Unified diffs of whole lines, for the review dialog: what an edit would
//! change, in the format of `diff -u` (three lines of context).
//!
//! Lines are compared with their line endings, so a CRLF→LF change shows.
//! The common head and tail are set aside first; the middle is diffed with
//! Myers' greedy algorithm (shortest edit script). A middle whose edit script
//! would need more than [`MAX_COST`] steps is shown as removed and added
//! whole: correct, just not minimal, and bounded in time and memory.

use std::fmt::Write;

/// Most edit steps searched for a minimal diff (the trace kept is about
/// `MAX_COST²` integers).
const MAX_COST: usize = 1500;
/// Lines of context around each change.
const CONTEXT: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Same,
    Removed,
    Added,
}

/// `text` split after each `\n` (the last line may lack one).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The shortest edit script turning `a` into `b` (Myers), or `None` when it
/// costs more than `MAX_COST`.
fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let offset = n + m + 1;
    let mut v = vec![0isize; 2 * offset as usize + 1];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let limit = (n + m).min(MAX_COST as isize);
    for d in 0..=limit {
        trace.push(v.clone());
        let mut k = -d;
        while k <= d {
            let at = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[at - 1] < v[at + 1]) { v[at + 1] } else { v[at - 1] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at] = x;
            if x >= n && y >= m {
                return Some(backtrack(&trace, offset, n, m, d));
            }
            k += 2;
        }
    }
    None
}

fn backtrack(trace: &[Vec<isize>], offset: isize, n: isize, m: isize, cost: isize) -> Vec<Op> {
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=cost).rev() {
        let v = &trace[d as usize];
        let k = x - y;
        let at = (k + offset) as usize;
        let down = k == -d || (k != d && v[at - 1] < v[at + 1]);
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = v[(prev_k + offset) as usize];
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            ops.push(Op::Same);
            x -= 1;
            y -= 1;
        }
        ops.push(if down { Op::Added } else { Op::Removed });
        (x, y) = (prev_x, prev_y);
    }
    ops.extend(std::iter::repeat_n(Op::Same, x as usize));
    ops.reverse();
    ops
}

/// The edit script of `a` → `b`: common head and tail, Myers in between.
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (a_mid, b_mid) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops = vec![Op::Same; head];
    match myers(a_mid, b_mid) {
        Some(middle) => ops.extend(middle),
        None => {
            ops.extend(std::iter::repeat_n(Op::Removed, a_mid.len()));
            ops.extend(std::iter::repeat_n(Op::Added, b_mid.len()));
        }
    }
    ops.extend(std::iter::repeat_n(Op::Same, tail));
    ops
}

/// `start,len` of a hunk side (1-based; an empty side names the line before).
fn range(start: usize, len: usize) -> String {
    match len {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{len}", start + 1),
    }
}

/// A unified diff of `before` → `after` with `name` in the header; empty
/// when nothing changed.
pub fn unified_diff(before: &str, after: &str, name: &str) -> String {
    let (a, b) = (lines(before), lines(after));
    let ops = script(&a, &b);
    // Positions in `a` and `b` before each op.
    let mut at = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0, 0);
    for op in &ops {
        at.push((i, j));
        match op {
            Op::Same => (i, j) = (i + 1, j + 1),
            Op::Removed => i += 1,
            Op::Added => j += 1,
        }
    }
    at.push((i, j));
    let changed: Vec<usize> = (0..ops.len()).filter(|&p| ops[p] != Op::Same).collect();
    let mut out = String::new();
    if changed.is_empty() {
        return out;
    }
    let _ = write!(out, "--- {name}\n+++ {name}\n");
    let mut next = 0;
    while next < changed.len() {
        // A hunk: changes closer than twice the context share one.
        let first = changed[next];
        let mut last = first;
        while next < changed.len() && changed[next] <= last + 2 * CONTEXT + 1 {
            last = changed[next];
            next += 1;
        }
        let start = first.saturating_sub(CONTEXT);
        let end = (last + 1 + CONTEXT).min(ops.len());
        let ((a0, b0), (a1, b1)) = (at[start], at[end]);
        let _ = writeln!(out, "@@ -{} +{} @@", range(a0, a1 - a0), range(b0, b1 - b0));
        for p in start..end {
            let (sign, line) = match ops[p] {
                Op::Same => (' ', a[at[p].0]),
                Op::Removed => ('-', a[at[p].0]),
                Op::Added => ('+', b[at[p].1]),
            };
            out.push(sign);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a unified diff's `+`/` ` lines hunk by hunk (a checker).
    fn patch(before: &str, diff: &str) -> String {
        let a = lines(before);
        let mut out = String::new();
        let mut pos = 0;
        let mut diff_lines = diff.split_inclusive('\n').skip(2).peekable();
        while let Some(header) = diff_lines.next() {
            let old = header.trim_start_matches("@@ -").split(' ').next().unwrap();
            let mut parts = old.split(',');
            let start: usize = parts.next().unwrap().parse().unwrap();
            let len: usize = parts.next().map_or(1, |l| l.parse().unwrap());
            let from = if len == 0 { start } else { start - 1 };
            out.extend(a[pos..from].iter().copied());
            pos = from;
            while let Some(line) = diff_lines.peek().copied() {
                if line.starts_with("@@") {
                    break;
                }
                diff_lines.next();
                let mut text = line[1..].to_owned();
                if diff_lines.peek().is_some_and(|l| l.starts_with('\\')) {
                    diff_lines.next();
                    text.pop();
                }
                match &line[..1] {
                    " " => {
                        out.push_str(&text);
                        pos += 1;
                    }
                    "-" => pos += 1,
                    "+" => out.push_str(&text),
                    other => panic!("unexpected line {other:?}"),
                }
            }
        }
        out.extend(a[pos..].iter().copied());
        out
    }

    #[test]
    fn shows_a_change_with_context() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let diff = unified_diff(before, after, "ch1");
        assert_eq!(diff, "--- ch1\n+++ ch1\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
    }

    #[test]
    fn nothing_changed_is_empty_and_edges_are_marked() {
        assert_eq!(unified_diff("x\n", "x\n", "n"), "");
        assert_eq!(unified_diff("", "new", "n"), "--- n\n+++ n\n@@ -0,0 +1 @@\n+new\n\\ No newline at end of file\n");
        assert_eq!(unified_diff("x\r\n", "x\n", "n"), "--- n\n+++ n\n@@ -1 +1 @@\n-x\r\n+x\n");
    }

    #[test]
    fn far_apart_changes_are_separate_hunks_and_the_diff_patches_back() {
        let before: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 3\n", "line three\n").replace("line 30\n", "").replace("line 39\n", "line 39");
        let diff = unified_diff(&before, &after, "n");
        assert_eq!(diff.matches("@@ -").count(), 3, "{diff}");
        assert_eq!(patch(&before, &diff), after);
    }

    #[test]
    fn random_edits_patch_back_and_large_rewrites_stay_bounded() {
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let before: Vec<String> = (0..(next() % 30)).map(|_| format!("{}\n", next() % 6)).collect();
            let mut after = before.clone();
            for _ in 0..(next() % 6) {
                let at = (next() as usize) % (after.len() + 1);
                match next() % 3 {
                    0 if at < after.len() => {
                        after.remove(at);
                    }
                    1 => after.insert(at, format!("{}\n", next() % 6)),
                    _ if at < after.len() => after[at] = format!("new {}\n", next() % 6),
                    _ => {}
                }
            }
            let (before, after) = (before.concat(), after.concat());
            assert_eq!(patch(&before, &unified_diff(&before, &after, "n")), after);
        }
        let before: String = (0..5000).map(|i| format!("old {i}\n")).collect();
        let after: String = (0..5000).map(|i| format!("new {i}\n")).collect();
        let diff = unified_diff(&before, &after, "n");
        assert_eq!(patch(&before, &diff), after, "beyond MAX_COST the middle is replaced whole");
    }
}
