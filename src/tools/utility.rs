//! Utility tools: the time, and the tools whose effect is what the person
//! sees in the stream (progress, thoughts, plans, the answer). None of them
//! is kept as an artifact.

use std::rc::Rc;

use serde::Deserialize;
use serde_json::json;

use super::{parse_args, Tool, ToolOutput};
use crate::platform;

pub fn tools() -> Vec<Rc<dyn Tool>> {
    vec![Rc::new(CurrentTime), Rc::new(ReportProgress), Rc::new(RecordThought), Rc::new(PlanTask), Rc::new(Respond)]
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
        parameters: json!({ "type": "object", "properties": {}, "required": [] }),
        read_only: true,
        approval: false,
        persists: None,
        call: |_args, _ctx| {
            let (iso, local) = describe_time(platform::now_ms(), platform::timezone_offset_minutes());
            Ok(ToolOutput::json(&json!({ "iso": iso, "local": local })))
        }
    }
}

/// Validated only: the stream shows the call's arguments.
#[derive(Deserialize)]
#[allow(dead_code)]
struct MessageArgs {
    #[serde(alias = "text", alias = "content")]
    message: String,
}

tool! {
    /// Tells the person what the agent is doing.
    ReportProgress {
        name: "report_progress",
        description: "Tell the person briefly what you are about to do (before searches or long reads).",
        parameters: json!({ "type": "object", "properties": { "message": { "type": "string" } }, "required": ["message"] }),
        read_only: true,
        approval: false,
        persists: None,
        call: |args, _ctx| {
            let _: MessageArgs = parse_args("report_progress", args)?;
            Ok(ToolOutput::text("Shown to the person."))
        }
    }
}

tool! {
    /// A short thought, shown as a collapsed reasoning block.
    RecordThought {
        name: "record_thought",
        description: "Record a short thought: an analysis step or a self-check. Shown to the person as collapsed reasoning.",
        parameters: json!({ "type": "object", "properties": { "thought": { "type": "string" } }, "required": ["thought"] }),
        read_only: true,
        approval: false,
        persists: None,
        call: |args, _ctx| {
            #[derive(Deserialize)]
            #[allow(dead_code)]
            struct A { #[serde(alias = "message", alias = "text")] thought: String }
            let _: A = parse_args("record_thought", args)?;
            Ok(ToolOutput::text("Noted."))
        }
    }
}

tool! {
    /// A plan of steps, shown as a card.
    PlanTask {
        name: "plan_task",
        description: "Show the plan for a multi-step task: the goal and the steps you will take.",
        parameters: json!({ "type": "object", "properties": {
            "goal": { "type": "string" }, "steps": { "type": "array", "items": { "type": "string" } } }, "required": ["goal", "steps"] }),
        read_only: true,
        approval: false,
        persists: None,
        call: |args, _ctx| {
            #[derive(Deserialize)]
            struct A { goal: String, steps: Vec<String> }
            let a: A = parse_args("plan_task", args)?;
            Ok(ToolOutput::text(format!("Plan recorded: {} ({} steps).", a.goal, a.steps.len())))
        }
    }
}

tool! {
    /// The answer to the person.
    Respond {
        name: "respond",
        description: "Give the person your answer (Markdown). Use it once, when the task is done.",
        parameters: json!({ "type": "object", "properties": { "answer": { "type": "string" } }, "required": ["answer"] }),
        read_only: true,
        approval: false,
        persists: None,
        call: |args, _ctx| {
            #[derive(Deserialize)]
            #[allow(dead_code)]
            struct A { #[serde(alias = "message", alias = "content")] answer: String }
            let _: A = parse_args("respond", args)?;
            Ok(ToolOutput::text("Delivered to the person."))
        }
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
