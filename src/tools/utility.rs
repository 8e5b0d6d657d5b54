//! Utility tools: the time, and the tools whose effect is what the person
//! sees in the stream (progress, thoughts, plans, the answer). None of them
//! is kept as an artifact.

use std::rc::Rc;

use serde_json::{json, Value};

use super::{About, AnyTool, Fields, NoArgs, Tool, ToolContext, ToolError, ToolOutput};
use crate::context::untrusted::defuse_fences;
use crate::platform;

pub fn tools() -> Vec<Rc<dyn AnyTool>> {
    let mut tools: Vec<Rc<dyn AnyTool>> = vec![Rc::new(CurrentTime)];
    tools.extend(NARRATIONS.map(|n| Rc::new(n) as Rc<dyn AnyTool>));
    tools.insert(3, Rc::new(PlanTask));
    tools
}

/// Civil date and time from milliseconds since the epoch (proleptic Gregorian).
fn civil(ms: f64) -> (i64, u32, u32, u32, u32, u32, u32) {
    let secs = (ms / 1000.0).floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's days-from-civil inverse.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    let weekday = (days + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday
    (y, m, d, (rem / 3600) as u32, ((rem % 3600) / 60) as u32, (rem % 60) as u32, weekday)
}

/// ISO 8601 (UTC) and a readable local form.
pub fn describe_time(ms: f64, offset_minutes: i32) -> (String, String) {
    let (y, m, d, h, mi, s, _) = civil(ms);
    let iso = format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z");
    let (ly, lm, ld, lh, lmi, _, wd) = civil(ms + f64::from(offset_minutes) * 60_000.0);
    const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let off = offset_minutes.unsigned_abs();
    let local = format!(
        "{}, {} {} {ly}, {lh:02}:{lmi:02} (UTC{sign}{:02}:{:02})",
        DAYS[wd as usize],
        ld,
        MONTHS[(lm - 1) as usize],
        off / 60,
        off % 60
    );
    (iso, local)
}

tool! {
    /// The current time.
    CurrentTime {
        name: "current_time",
        description: "Get the current date and time (ISO 8601 and the person's local time).",
        parameters: crate::tools::no_arguments(),
        about: About::READ,
        args: NoArgs,
        parse: |_f| Ok(NoArgs),
        call: |_args, _ctx| {
            let (iso, local) = describe_time(platform::now_ms(), platform::timezone_offset_minutes());
            Ok(ToolOutput::json(&json!({ "iso": iso, "local": local })))
        }
    }
}

/// A tool whose effect is what the person sees: its text, shown in the
/// stream as a block of `block` (or, with no block, as the answer itself).
struct Narration {
    name: &'static str,
    description: &'static str,
    /// The argument holding the text, then the names models also use for it.
    names: &'static [&'static str],
    block: Option<&'static str>,
    reply: &'static str,
}

const NARRATIONS: [Narration; 3] = [
    Narration {
        name: "report_progress",
        description: "Tell the person briefly what you are about to do (before searches or long reads).",
        names: &["message", "text", "content"],
        block: Some("tool"),
        reply: "Shown to the person.",
    },
    Narration {
        name: "record_thought",
        description:
            "Record a short thought: an analysis step or a self-check. Shown to the person as collapsed reasoning.",
        names: &["thought", "message", "text"],
        block: Some("thought"),
        reply: "Noted.",
    },
    Narration {
        name: "respond",
        description: "Give the person your answer (Markdown). Use it once, when the task is done.",
        names: &["answer", "message", "content"],
        block: None,
        reply: "Delivered to the person.",
    },
];

#[async_trait::async_trait(?Send)]
impl Tool for Narration {
    /// The text, under the field's name or one models also use for it.
    type Args = String;
    fn name(&self) -> &str {
        self.name
    }
    fn spec(&self) -> crate::llm::ToolSpec {
        crate::llm::ToolSpec::function(self.name, self.description, super::one_string(self.names[0]))
    }
    /// The narration without a block is the answer itself (`respond`).
    fn about(&self) -> About {
        About { answers: self.block.is_none(), bulk: &["answer", "content", "text"], ..About::READ }
    }
    fn parse(&self, args: &Value) -> Result<String, ToolError> {
        Fields::of(self.name, args)?.text(self.names)
    }
    fn render(&self, text: &String) -> Option<String> {
        let text = defuse_fences(text);
        Some(match self.block {
            Some("tool") => format!("\n```tool\n{}: {text}\n```\n", self.name),
            Some(block) => format!("\n```{block}\n{text}\n```\n"),
            None => format!("\n{text}\n"),
        })
    }
    async fn call(&self, _text: &String, _ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.reply))
    }
}

/// A plan of steps, shown as a card.
struct PlanTask;

pub struct PlanArgs {
    goal: String,
    steps: Vec<String>,
}

#[async_trait::async_trait(?Send)]
impl Tool for PlanTask {
    type Args = PlanArgs;
    fn name(&self) -> &str {
        "plan_task"
    }
    fn spec(&self) -> crate::llm::ToolSpec {
        crate::llm::ToolSpec::function(
            "plan_task",
            "Show the plan for a multi-step task: the goal and the steps you will take.",
            crate::tools::schema(
                r#"{
                    "type": "object",
                    "properties": {
                        "goal": {"type": "string"},
                        "steps": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["goal", "steps"]
                }"#,
            ),
        )
    }
    fn about(&self) -> About {
        About::READ
    }
    fn parse(&self, args: &Value) -> Result<PlanArgs, ToolError> {
        let f = Fields::of("plan_task", args)?;
        let steps = f.value("steps")?.ok_or_else(|| f.invalid("missing field `steps`"))?;
        Ok(PlanArgs { goal: f.text(&["goal"])?, steps })
    }
    fn render(&self, plan: &PlanArgs) -> Option<String> {
        let goal = defuse_fences(&plan.goal);
        let steps: Vec<String> =
            plan.steps.iter().enumerate().map(|(i, s)| format!("{}. {}", i + 1, defuse_fences(s))).collect();
        Some(format!("\n```plan\n{goal}\n{}\n```\n", steps.join("\n")))
    }
    async fn call(&self, plan: &PlanArgs, _ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("Plan recorded: {} ({} steps).", plan.goal, plan.steps.len())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_well() {
        // 2026-11-30T11:20:05Z, Monday.
        let ms = 1_796_037_605_000.0_f64;
        let (iso, local) = describe_time(ms, 540);
        assert_eq!(iso, "2026-11-30T11:20:05Z");
        assert_eq!(local, "Monday, 30 November 2026, 20:20 (UTC+09:00)");
        let (_, west) = describe_time(ms, -300);
        assert_eq!(west, "Monday, 30 November 2026, 06:20 (UTC-05:00)");
    }
}
