//! Which MCP servers the relay reaches: `ATELIER_MCP_SERVERS="name=url,…"`
//! and one bearer token per server (`ATELIER_MCP_TOKEN_<NAME>` or
//! `--mcp-token name=token`), checked once at start so a typo stops the
//! proxy with a message instead of failing on the first call.

use url::Url;

/// Longest server name: the package names a relayed tool `<server>_<tool>`
/// within the 64 characters a function name may have.
pub const MAX_NAME: usize = 32;

/// Why the MCP settings were refused (the proxy does not start).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("ATELIER_MCP_SERVERS entry {0:?} is not `name=url`")]
    NotAPair(String),
    #[error("MCP server name {0:?} must be 1 to 32 of a-z, 0-9 and -")]
    BadName(String),
    #[error("MCP server {0:?} is configured twice")]
    Duplicate(String),
    #[error("MCP server {name:?}: {reason}")]
    BadUrl { name: String, reason: String },
    #[error("--mcp-token {0:?} is not `name=token`")]
    BadTokenFlag(String),
    #[error("--mcp-token names {0:?}, which is not in ATELIER_MCP_SERVERS")]
    TokenWithoutServer(String),
    #[error("MCP server {0:?} has credentials in its URL and a token: configure one of them")]
    TwoCredentials(String),
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// `[a-z0-9-]{1,32}`: the `<name>` of `/api/mcp/<name>`.
    pub name: String,
    /// The MCP endpoint, exactly as configured; requests go here and nowhere else.
    pub url: Url,
    /// Sent as `Authorization: Bearer …` to this server only.
    pub token: Option<String>,
}

impl ServerConfig {
    /// What must never reach a browser or a log: the token, and the
    /// password and query values of the URL (raw and decoded), when they are
    /// long enough to be told apart from ordinary text (4 bytes or more).
    pub fn secrets(&self) -> Vec<String> {
        let mut secrets: Vec<String> = self.token.iter().cloned().collect();
        if let Some(password) = self.url.password() {
            secrets.push(password.to_owned());
            secrets.push(percent_decoded(password));
        }
        for (_, value) in self.url.query_pairs() {
            secrets.push(value.into_owned());
        }
        if let Some(query) = self.url.query() {
            secrets.extend(query.split('&').filter_map(|pair| pair.split_once('=')).map(|(_, v)| v.to_owned()));
        }
        secrets.retain(|s| s.len() >= 4);
        secrets.sort();
        secrets.dedup();
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets
    }
}

fn percent_decoded(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={text}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// The environment variable that holds the token of server `name`.
pub fn token_variable(name: &str) -> String {
    format!("ATELIER_MCP_TOKEN_{}", name.to_ascii_uppercase().replace('-', "_"))
}

fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Reads the server list (`entries`: the comma-split `ATELIER_MCP_SERVERS`),
/// the `--mcp-token` flags and, for a server without a flag, its
/// `ATELIER_MCP_TOKEN_<NAME>` from `env`.
pub fn parse(
    entries: &[String],
    token_flags: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let mut servers: Vec<ServerConfig> = Vec::new();
    for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        let (name, raw) = entry.split_once('=').ok_or_else(|| ConfigError::NotAPair(entry.to_owned()))?;
        let name = name.trim();
        if !valid_name(name) {
            return Err(ConfigError::BadName(name.to_owned()));
        }
        if servers.iter().any(|s| s.name == name) {
            return Err(ConfigError::Duplicate(name.to_owned()));
        }
        let bad = |reason: String| ConfigError::BadUrl { name: name.to_owned(), reason };
        let url = Url::parse(raw.trim()).map_err(|e| bad(format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!("only http and https URLs are relayed (got {}:)", url.scheme())));
        }
        if url.host().is_none() {
            return Err(bad("the URL has no host".into()));
        }
        if url.fragment().is_some() {
            return Err(bad("the URL has a #fragment, which HTTP never sends".into()));
        }
        let token = env(&token_variable(name)).map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        servers.push(ServerConfig { name: name.to_owned(), url, token });
    }
    for flag in token_flags {
        let (name, token) = flag.split_once('=').ok_or_else(|| ConfigError::BadTokenFlag(redacted_flag(flag)))?;
        let server = servers
            .iter_mut()
            .find(|s| s.name == name.trim())
            .ok_or_else(|| ConfigError::TokenWithoutServer(name.trim().to_owned()))?;
        let token = token.trim();
        server.token = (!token.is_empty()).then(|| token.to_owned());
    }
    // Both would be sent as `Authorization`, and the server would pick one.
    if let Some(both) =
        servers.iter().find(|s| s.token.is_some() && (!s.url.username().is_empty() || s.url.password().is_some()))
    {
        return Err(ConfigError::TwoCredentials(both.name.clone()));
    }
    Ok(servers)
}

/// A malformed `--mcp-token` value may be a bare token: never print it.
fn redacted_flag(flag: &str) -> String {
    format!("({} characters)", flag.chars().count())
}

/// `ATELIER_MCP_TOKEN_*` variables in `names` that belong to no server (a
/// typo would otherwise leave a server without its token, silently).
pub fn orphan_tokens(servers: &[ServerConfig], names: impl Iterator<Item = String>) -> Vec<String> {
    let mut orphans: Vec<String> = names
        .filter(|n| n.starts_with("ATELIER_MCP_TOKEN_"))
        .filter(|n| !servers.iter().any(|s| &token_variable(&s.name) == n))
        .collect();
    orphans.sort();
    orphans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    fn parsed(
        entries: &str,
        flags: &[&str],
        env: &'static [(&'static str, &'static str)],
    ) -> Result<Vec<ServerConfig>, ConfigError> {
        let entries: Vec<String> = entries.split(',').map(str::to_owned).collect();
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        parse(&entries, &flags, &env_of(env))
    }

    #[test]
    fn names_urls_and_tokens() {
        let servers = parsed(
            "notes=http://127.0.0.1:3001/mcp, kb-2=https://kb.example.com/mcp?tenant=7",
            &[],
            &[("ATELIER_MCP_TOKEN_KB_2", "kb-secret"), ("ATELIER_MCP_TOKEN_NOTES", " ")],
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!((servers[0].name.as_str(), servers[0].token.as_deref()), ("notes", None));
        assert_eq!(servers[1].url.as_str(), "https://kb.example.com/mcp?tenant=7");
        assert_eq!(servers[1].token.as_deref(), Some("kb-secret"));
        let flagged =
            parsed("notes=http://h/mcp", &["notes=from-flag"], &[("ATELIER_MCP_TOKEN_NOTES", "env")]).unwrap();
        assert_eq!(flagged[0].token.as_deref(), Some("from-flag"), "a flag beats the environment");
        assert!(parsed("", &[], &[]).unwrap().is_empty());
    }

    #[test]
    fn refused_settings() {
        let cases: &[(&str, &[&str], ConfigError)] = &[
            ("notes", &[], ConfigError::NotAPair("notes".into())),
            ("Notes=http://h/", &[], ConfigError::BadName("Notes".into())),
            ("no_tes=http://h/", &[], ConfigError::BadName("no_tes".into())),
            ("=http://h/", &[], ConfigError::BadName("".into())),
            ("a=http://h/", &["b=t"], ConfigError::TokenWithoutServer("b".into())),
            ("a=http://h/,a=http://i/", &[], ConfigError::Duplicate("a".into())),
            ("a=http://h/", &["bare-secret-token"], ConfigError::BadTokenFlag("(17 characters)".into())),
            ("a=http://u:p@h/", &["a=t"], ConfigError::TwoCredentials("a".into())),
        ];
        for (entries, flags, expected) in cases {
            assert_eq!(parsed(entries, flags, &[]).unwrap_err(), *expected, "{entries}");
        }
        let long = format!("{}=http://h/", "a".repeat(33));
        assert!(matches!(parse(&[long], &[], &|_| None), Err(ConfigError::BadName(_))));
        for url in ["ftp://h/", "file:///etc/passwd", "not a url", "http://h/#frag", "data:text/plain,x"] {
            let entry = format!("a={url}");
            assert!(matches!(parse(&[entry], &[], &|_| None), Err(ConfigError::BadUrl { .. })), "{url}");
        }
    }

    #[test]
    fn secrets_cover_the_token_and_the_url_credentials() {
        let server = ServerConfig {
            name: "a".into(),
            url: Url::parse("https://user:p%40ss-word@h/mcp?key=abc%2Fdef&x=1").unwrap(),
            token: Some("tok-123456".into()),
        };
        let secrets = server.secrets();
        for s in ["tok-123456", "p%40ss-word", "p@ss-word", "abc/def", "abc%2Fdef"] {
            assert!(secrets.contains(&s.to_owned()), "{s} in {secrets:?}");
        }
        assert!(!secrets.contains(&"1".to_owned()), "too short to tell apart from text");
    }

    #[test]
    fn token_variables_and_orphans() {
        assert_eq!(token_variable("kb-2"), "ATELIER_MCP_TOKEN_KB_2");
        let servers = parsed("kb-2=http://h/", &[], &[]).unwrap();
        let names = ["ATELIER_MCP_TOKEN_KB_2", "ATELIER_MCP_TOKEN_KB2", "PATH"].map(str::to_owned);
        assert_eq!(orphan_tokens(&servers, names.into_iter()), ["ATELIER_MCP_TOKEN_KB2"]);
    }
}
