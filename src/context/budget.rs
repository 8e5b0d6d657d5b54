//! Fitting a set of files to a token budget, in one fixed order: whole texts
//! become snippets (the largest first), then the oldest files become one
//! line, then optional files are dropped. A `delegate`'s read set and the
//! continuity notes the writing strategy reads are fitted this way.

use serde::{Deserialize, Serialize};

/// Characters of a snippet when a whole text does not fit.
pub const SNIPPET_CHARS: usize = 600;

/// One file of a set, as the reader gets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct File {
    /// `artifact:<id>`, `section:<id>` or `outline:<project id>`.
    pub key: String,
    pub title: String,
    pub purpose: String,
    pub text: String,
    /// Milliseconds since the epoch (creation or last change): "oldest".
    pub at: f64,
    pub optional: bool,
    pub form: Form,
}

/// How much of a file the reader's first message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    Whole,
    Snippet,
    Line,
    Dropped,
}

impl File {
    fn render(&self, out: &mut String) {
        let purpose = if self.purpose.is_empty() { String::new() } else { format!(" — {}", self.purpose) };
        match self.form {
            Form::Dropped => {}
            Form::Line => out.push_str(&format!(
                "### {} \"{}\"{purpose}\n(one line only: {} characters; read_file gives the text if your budget allows)\n\n",
                self.key,
                self.title,
                self.text.chars().count()
            )),
            Form::Snippet => {
                let head: String = self.text.chars().take(SNIPPET_CHARS).collect();
                out.push_str(&format!(
                    "### {} \"{}\"{purpose}\n{head}…\n(snippet of {} characters; read_file gives the rest if your budget allows)\n\n",
                    self.key,
                    self.title,
                    self.text.chars().count()
                ));
            }
            Form::Whole => out.push_str(&format!("### {} \"{}\"{purpose}\n{}\n\n", self.key, self.title, self.text)),
        }
    }
}

/// The files in their fitted forms, under a `## Files` heading.
pub fn files_message(files: &[File]) -> String {
    let mut out = String::from("## Files\n");
    for file in files {
        file.render(&mut out);
    }
    if files.iter().all(|f| f.form == Form::Dropped) {
        out.push_str("(none)\n");
    }
    out.trim_end().to_owned()
}

/// Fits the files to `room` tokens (of which `fixed` are taken already) in
/// the documented order; `Err` is the tokens they still need and the room.
pub fn fit(files: &mut [File], room: usize, fixed: usize) -> Result<(), (usize, usize)> {
    let cost = |files: &[File]| fixed + crate::llm::estimate_tokens(&files_message(files));
    // 1. Whole texts become snippets, the largest first.
    while cost(files) > room {
        let Some(largest) = files
            .iter_mut()
            .filter(|f| f.form == Form::Whole && f.text.chars().count() > SNIPPET_CHARS)
            .max_by_key(|f| f.text.len())
        else {
            break;
        };
        largest.form = Form::Snippet;
    }
    // 2. The oldest files become one line.
    while cost(files) > room {
        let Some(oldest) = files
            .iter_mut()
            .filter(|f| matches!(f.form, Form::Whole | Form::Snippet))
            .min_by(|a, b| a.at.total_cmp(&b.at))
        else {
            break;
        };
        oldest.form = Form::Line;
    }
    // 3. Optional files are dropped.
    while cost(files) > room {
        let Some(optional) = files.iter_mut().find(|f| f.optional && f.form != Form::Dropped) else { break };
        optional.form = Form::Dropped;
    }
    let total = cost(files);
    if total > room {
        return Err((total, room));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(key: &str, chars: usize, at: f64, optional: bool) -> File {
        File {
            key: key.into(),
            title: key.into(),
            purpose: String::new(),
            text: "word ".repeat(chars / 5),
            at,
            optional,
            form: Form::Whole,
        }
    }

    #[test]
    fn a_set_degrades_in_the_documented_order() {
        let set = || vec![file("a", 8000, 1.0, false), file("b", 2000, 2.0, false), file("c", 4000, 3.0, true)];
        let mut files = set();
        fit(&mut files, 100_000, 0).unwrap();
        assert!(files.iter().all(|f| f.form == Form::Whole), "room for everything");
        fit(&mut files, 2_000, 0).unwrap();
        assert_eq!(files[0].form, Form::Snippet, "the largest becomes a snippet first");
        let mut files = set();
        fit(&mut files, 350, 0).unwrap();
        assert_eq!(files[0].form, Form::Line, "then the oldest become one line: {files:?}");
        let mut files = set();
        let (needed, room) = fit(&mut files, 20, 0).unwrap_err();
        assert!(needed > room && room == 20);
    }
}
