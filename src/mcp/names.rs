//! The names models call MCP tools by: `mcp_<server>_<tool>`, within the
//! function-name rule of the model APIs (`[A-Za-z0-9_-]{1,64}`). Two
//! servers cannot clash (the server is in the name, and a server's name,
//! `[a-z0-9-]{1,32}` on the proxy, has no `_`, so the first `_` after
//! `mcp_` ends it) and neither can a built-in tool (none starts with `mcp_`). A tool name that had to change
//! (another character, or cut to fit) ends in a hash of the original, so two
//! originals never meet in one name. The same server and tool always give
//! the same name: the person's approval settings and grants, and the model
//! provider's prompt cache, key on it.

/// Longest function name the model APIs take.
pub const MAX_NAME: usize = 64;

/// How the agent's names of MCP tools begin.
pub const PREFIX: &str = "mcp_";

/// The agent's name for tool `tool` of relayed server `server`.
pub fn agent_tool_name(server: &str, tool: &str) -> String {
    let mut name = String::from(PREFIX);
    let mut exact = true;
    for part in [server, "_", tool] {
        for c in part.chars() {
            let kept = c.is_ascii_alphanumeric() || c == '-' || c == '_';
            exact &= kept;
            name.push(if kept { c } else { '_' });
        }
    }
    if exact && name.len() <= MAX_NAME {
        return name;
    }
    // FNV-1a of the original pair, as 8 hex digits after the cut.
    let hash = [server, "\0", tool]
        .iter()
        .flat_map(|part| part.bytes())
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    name.truncate(MAX_NAME - 9);
    name.push('_');
    for shift in (0..8).rev() {
        name.push(char::from(b"0123456789abcdef"[(hash >> (shift * 4)) as usize & 15]));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_NAME).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }

    #[test]
    fn names_fit_the_rule_and_never_meet() {
        let long = "t".repeat(100);
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("notes", "search", Some("mcp_notes_search")),
            ("everything", "get-sum", Some("mcp_everything_get-sum")),
            ("a", "read_file", Some("mcp_a_read_file")),
            // Changed characters and long names end in a hash.
            ("notes", "files.read", None),
            ("notes", "files_read", Some("mcp_notes_files_read")),
            ("notes", "日本語", None),
            ("notes", &long, None),
            ("x".repeat(32).leak(), &long, None),
            ("notes", "", Some("mcp_notes_")),
        ];
        let mut seen = Vec::new();
        for (server, tool, expected) in cases {
            let name = agent_tool_name(server, tool);
            assert!(valid(&name), "{name}");
            if let Some(expected) = expected {
                assert_eq!(&name, expected);
            } else {
                assert_eq!(name.as_bytes()[name.len() - 9], b'_', "{name}");
            }
            assert_eq!(name, agent_tool_name(server, tool), "stable");
            assert!(!seen.contains(&name), "{name} twice");
            seen.push(name);
        }
        // Two tools that differ only past the cut, or in a replaced character.
        assert_ne!(agent_tool_name("s", &format!("{long}a")), agent_tool_name("s", &format!("{long}b")));
        assert_ne!(agent_tool_name("s", "a.b"), agent_tool_name("s", "a/b"));
        // The server is part of the hash: a server and tool cannot trade characters.
        assert_ne!(agent_tool_name("a-b", "c.d"), agent_tool_name("a", "b-c.d"));
    }
}
