//! OAuth scopes: what an access token lets its holder call.
//!
//! - `read`: the read-only tools (listing, finding, searching, reading,
//!   downloading);
//! - `write`: the tools that change files;
//! - `agent`: the agent tools (which run coding agents in a workdir).
//!
//! Every MCP request is checked by its method ([`Scopes::required_for`]):
//! discovery and lifecycle methods (`initialize`, `tools/list`, …) need
//! none, so `tools/list` still lists every tool the server offers; methods
//! that read content (`resources/read`, …) need `read`; a tool call needs
//! its tool's scope; the Tasks extension's methods need `agent`. A method
//! or tool the table does not know needs every scope (fail closed: a
//! method added to MCP later is not open to a narrow token by default).
//! A request outside the token's scopes is refused with `403
//! insufficient_scope`.

use std::collections::BTreeSet;
use std::fmt;

use crate::mcp::methods::{self, MethodAccess};
use crate::mcp::{ToolKind, ToolName};

/// One scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Read-only tools.
    Read,
    /// Mutations.
    Write,
    /// Agent tools.
    Agent,
}

impl Scope {
    /// Every scope, in the order they are shown.
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Agent];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Agent => "agent",
        }
    }

    /// What it allows, for the consent page.
    pub const fn describe(self) -> &'static str {
        match self {
            Scope::Read => "list, search and read files in the workdirs",
            Scope::Write => "create, edit and delete files in read-write workdirs",
            Scope::Agent => "run coding agents in workdirs that allow them",
        }
    }

    fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The scope a tool call needs: agent tools need `agent`, tools that
    /// declare themselves read-only need `read`, every other tool `write`.
    pub fn required_by(tool: ToolName) -> Scope {
        match tool.kind() {
            ToolKind::Agent => Scope::Agent,
            ToolKind::File | ToolKind::Binary if tool.is_read_only() => Scope::Read,
            ToolKind::File | ToolKind::Binary => Scope::Write,
        }
    }
}

/// A set of scopes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scopes(BTreeSet<Scope>);

/// A scope string named a scope this server does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope {0:?} (this server has read, write and agent)")]
pub struct UnknownScope(pub String);

impl Scopes {
    /// Every scope.
    pub fn all() -> Scopes {
        Scopes(Scope::ALL.into_iter().collect())
    }

    /// Parses a space-separated scope string (RFC 6749 §3.3) strictly.
    ///
    /// # Errors
    ///
    /// A name that is not a scope of this server.
    pub fn parse(text: &str) -> Result<Scopes, UnknownScope> {
        text.split(' ')
            .filter(|s| !s.is_empty())
            .map(|s| Scope::parse(s).ok_or_else(|| UnknownScope(s.to_owned())))
            .collect::<Result<BTreeSet<_>, _>>()
            .map(Scopes)
    }

    /// The known scopes among `names`, ignoring others (an external
    /// issuer's tokens may carry scopes of other resources).
    pub fn known<'a>(names: impl IntoIterator<Item = &'a str>) -> Scopes {
        Scopes(names.into_iter().filter_map(Scope::parse).collect())
    }

    /// The scopes a request of `method` needs; `tool` is the tool a
    /// `tools/call` names, when its params could be read. An unknown
    /// method, an unknown tool, or a `tools/call` without a readable tool
    /// name needs every scope (fail closed).
    pub fn required_for(method: &str, tool: Option<&str>) -> Scopes {
        match methods::access(method) {
            Some(MethodAccess::Nothing) => Scopes::default(),
            Some(MethodAccess::Read) => Scopes::default().with(Scope::Read),
            Some(MethodAccess::AgentTask) => Scopes::default().with(Scope::Agent),
            Some(MethodAccess::Tool) => tool
                .and_then(ToolName::from_wire)
                .map_or_else(Scopes::all, |tool| {
                    Scopes::default().with(Scope::required_by(tool))
                }),
            None => Scopes::all(),
        }
    }

    /// The scopes of `self` missing from `held`.
    pub fn missing_from(&self, held: &Scopes) -> Scopes {
        Scopes(self.0.difference(&held.0).copied().collect())
    }

    /// The union of both sets.
    pub fn union(&self, other: &Scopes) -> Scopes {
        Scopes(self.0.union(&other.0).copied().collect())
    }

    /// Whether every scope of `self` is in `other`.
    pub fn is_subset(&self, other: &Scopes) -> bool {
        self.0.is_subset(&other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The set with `scope` added.
    pub fn with(mut self, scope: Scope) -> Scopes {
        self.0.insert(scope);
        self
    }

    /// The scopes, in order.
    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|s| s.as_str()).collect();
        f.write_str(&names.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_needs_the_scope_of_what_it_does() {
        let scope = |name: &str| {
            let tool = ToolName::ALL.iter().find(|t| t.as_str() == name).unwrap();
            Scope::required_by(*tool)
        };
        for read in [
            "list_workdirs",
            "read_text_file",
            "search_text",
            "download_binary_file",
        ] {
            assert_eq!(scope(read), Scope::Read, "{read}");
        }
        for write in [
            "create_text_file",
            "edit_text_file",
            "delete_directory",
            "upload_binary_file",
        ] {
            assert_eq!(scope(write), Scope::Write, "{write}");
        }
        for agent in ["submit_agent_task", "get_agent_task", "list_agent_runtimes"] {
            assert_eq!(scope(agent), Scope::Agent, "{agent}");
        }
    }

    #[test]
    fn every_method_needs_what_it_touches_and_unknown_ones_need_everything() {
        let needs =
            |method: &str, tool: Option<&str>| Scopes::required_for(method, tool).to_string();
        for free in [
            "initialize",
            "ping",
            "tools/list",
            "resources/templates/list",
        ] {
            assert_eq!(needs(free, None), "", "{free}");
        }
        for read in [
            "resources/read",
            "resources/subscribe",
            "completion/complete",
        ] {
            assert_eq!(needs(read, None), "read", "{read}");
        }
        for agent in ["tasks/get", "tasks/update", "tasks/cancel", "tasks/list"] {
            assert_eq!(needs(agent, None), "agent", "{agent}");
        }
        assert_eq!(needs("tools/call", Some("read_text_file")), "read");
        assert_eq!(needs("tools/call", Some("delete_file")), "write");
        assert_eq!(needs("tools/call", Some("submit_agent_task")), "agent");
        // Fail closed: what the table does not know needs every scope.
        for (method, tool) in [
            ("tools/call", None),
            ("tools/call", Some("no_such_tool")),
            ("resources/write", None),
            ("sampling/createMessage", None),
            ("Resources/Read", None),
            ("", None),
        ] {
            assert_eq!(needs(method, tool), "read write agent", "{method} {tool:?}");
        }
    }

    #[test]
    fn scope_strings_parse_strictly() {
        assert_eq!(
            Scopes::parse("write  read").unwrap().to_string(),
            "read write"
        );
        assert_eq!(Scopes::parse("").unwrap(), Scopes::default());
        assert_eq!(
            Scopes::parse("read admin"),
            Err(UnknownScope("admin".to_owned()))
        );
        assert_eq!(Scopes::known(["openid", "agent"]).to_string(), "agent");
        assert!(Scopes::parse("read").unwrap().is_subset(&Scopes::all()));
        assert!(!Scopes::all().is_subset(&Scopes::parse("read").unwrap()));
    }
}
