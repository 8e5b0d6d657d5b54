//! Running external commands: echo them, fail with a message naming them.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Result;

/// A command line to run.
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    dir: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        Cmd { program: program.as_ref().to_owned(), args: Vec::new(), dir: None, env: Vec::new() }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Cmd {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn dir(mut self, dir: impl AsRef<Path>) -> Cmd {
        self.dir = Some(dir.as_ref().to_owned());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Cmd {
        self.env.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args);
        if let Some(dir) = &self.dir {
            c.current_dir(dir);
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }
}

/// Runs `cmd` with inherited output; a non-zero exit is an error.
pub fn run(cmd: Cmd) -> Result {
    eprintln!("$ {}", cmd.display());
    let status = cmd.command().status().map_err(|e| format!("cannot start `{}`: {e}", cmd.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", cmd.display()))
    }
}

/// Runs `cmd` quietly and returns its stdout, or `None` if it cannot run or fails.
pub fn output(cmd: Cmd) -> Option<String> {
    let out = cmd.command().stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
