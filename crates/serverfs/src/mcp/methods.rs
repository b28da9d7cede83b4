//! The MCP client request methods this server knows, each with what it
//! touches. One table serves two checks: whether a method is one of MCP's
//! own (so a request rmcp could not type had bad params, not an unknown
//! method: [`crate::jsonrpc::is_mcp_method`]), and which OAuth scopes a
//! request needs ([`crate::oauth::scope::Scopes::required_for`]), where a
//! method missing here needs every scope.

/// What a request of one method touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodAccess {
    /// Lifecycle and discovery: nothing in a workdir is read or changed.
    Nothing,
    /// It reads workdir content.
    Read,
    /// `tools/call`: the called tool decides.
    Tool,
    /// The Tasks extension: agent tasks are read, answered or cancelled.
    AgentTask,
}

/// Every client request method of MCP that this server knows.
const METHODS: &[(&str, MethodAccess)] = &[
    ("initialize", MethodAccess::Nothing),
    ("ping", MethodAccess::Nothing),
    ("server/discover", MethodAccess::Nothing),
    ("logging/setLevel", MethodAccess::Nothing),
    ("tools/list", MethodAccess::Nothing),
    ("resources/list", MethodAccess::Nothing),
    ("resources/templates/list", MethodAccess::Nothing),
    ("prompts/list", MethodAccess::Nothing),
    ("resources/read", MethodAccess::Read),
    ("resources/directory/read", MethodAccess::Read),
    ("resources/subscribe", MethodAccess::Read),
    ("resources/unsubscribe", MethodAccess::Read),
    ("subscriptions/listen", MethodAccess::Read),
    ("completion/complete", MethodAccess::Read),
    ("prompts/get", MethodAccess::Read),
    ("skills/list", MethodAccess::Read),
    ("skills/get", MethodAccess::Read),
    ("tools/call", MethodAccess::Tool),
    ("tasks/get", MethodAccess::AgentTask),
    ("tasks/list", MethodAccess::AgentTask),
    ("tasks/result", MethodAccess::AgentTask),
    ("tasks/update", MethodAccess::AgentTask),
    ("tasks/cancel", MethodAccess::AgentTask),
];

/// What `method` touches; `None` for a method this server does not know
/// (matched exactly: method names are case-sensitive).
pub fn access(method: &str) -> Option<MethodAccess> {
    METHODS
        .iter()
        .find(|(name, _)| *name == method)
        .map(|(_, access)| *access)
}
