//! [`RunHandler`]: the MCP server of one run (one instance per MCP session), on the official Rust
//! SDK (`rmcp`). `tools/list` and `tools/call` go through the bridge queue actor via the hub
//! ([`RunCalls`]);
//! a call waits for the pi result, its deadline, the client's cancellation or the run's end.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult, ErrorCode, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use toolstream_actors::bridge::exposure::ExposedTool;
use toolstream_actors::bridge::RejectKind;

/// The server name in the MCP `initialize` answer.
pub const INITIALIZE_SERVER_NAME: &str = "toolstream-pi-bridge";

/// How one MCP `tools/call` ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The name is not exposed: an `isError` result with this text.
    Unknown(String),
    /// pi's result.
    Result { content: Vec<Value>, is_error: bool },
    /// Rejected (deadline, cancellation, run cancelled or disposed): an MCP error.
    Rejected { kind: RejectKind, message: String },
}

/// What a run's MCP handler asks of the bridge (the hub, `super::hub`): the run's tools, and one
/// call queued and waited for to its end. A trait, so that the handler does not name the hub (whose
/// routes hold the handlers' service).
pub(super) trait RunCalls: Send + Sync {
    /// How long `tools/list` waits for the run's tools.
    fn list_timeout(&self) -> Duration;
    fn list_tools<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Arc<[ExposedTool]>, McpError>>;
    /// One MCP `tools/call`: queued, then waited for to its end (or the client's cancellation).
    fn call_tool<'a>(
        &'a self,
        run_id: &'a str,
        mcp_tool: &'a str,
        mcp_request_id: String,
        args: Value,
        cancelled: CancellationToken,
    ) -> BoxFuture<'a, Result<CallOutcome, McpError>>;
}

#[derive(Clone)]
pub struct RunHandler {
    pub(super) calls: Arc<dyn RunCalls>,
    pub(super) run_id: String,
    /// Unique per MCP session: JSON-RPC ids are unique only within a session.
    pub(super) session: u64,
}

impl std::fmt::Debug for RunHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandler").field("run_id", &self.run_id).field("session", &self.session).finish()
    }
}

/// An exposed tool as an MCP `Tool` (built from its wire shape, so the SDK's own types check it).
fn mcp_tool(t: &ExposedTool) -> Result<Tool, McpError> {
    serde_json::from_value(json!({
        "name": t.mcp_name,
        "description": t.description,
        "inputSchema": Value::Object(t.input_schema.clone()),
    }))
    .map_err(|e| McpError::internal_error(format!("pi bridge tool is not a valid MCP tool: {e}"), None))
}

fn tool_result(content: Vec<Value>, is_error: bool) -> Result<CallToolResult, McpError> {
    serde_json::from_value(json!({"content": content, "isError": is_error}))
        .map_err(|e| McpError::internal_error(format!("pi result is not valid MCP content: {e}"), None))
}

impl ServerHandler for RunHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(INITIALIZE_SERVER_NAME, env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let wait = self.calls.list_timeout();
        let tools = tokio::time::timeout(wait, self.calls.list_tools(&self.run_id))
            .await
            .map_err(|_| McpError::internal_error("Cursor pi bridge ListTools timed out", None))??;
        let tools = tools.iter().map(mcp_tool).collect::<Result<Vec<_>, _>>()?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let mcp_request_id = format!("s{}:{}", self.session, request_id_text(&context.id));
        let outcome =
            self.calls.call_tool(&self.run_id, &request.name, mcp_request_id, args, context.ct.clone()).await?;
        match outcome {
            CallOutcome::Unknown(message) => {
                Ok(tool_result(vec![json!({"type": "text", "text": message})], true)?.into())
            }
            CallOutcome::Result { content, is_error } => Ok(tool_result(content, is_error)?.into()),
            CallOutcome::Rejected { message, .. } => Err(McpError::internal_error(message, None)),
        }
    }

    /// rmcp parses a request whose params do not fit its method's type (`tools/call` with string
    /// `arguments`) as a custom request: for a method served here that is `-32602` invalid params
    /// (JSON-RPC), not "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if !SERVED_METHODS.contains(&request.method.as_str()) {
            return Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None));
        }
        let why = match request.method.as_str() {
            "tools/call" => request.params_as::<CallToolRequestParams>().err(),
            _ => request.params_as::<PaginatedRequestParams>().err(),
        };
        let why = why.map_or_else(|| "params of the wrong shape".to_owned(), |e| e.to_string());
        Err(McpError::invalid_params(format!("Invalid params for {}: {why}", request.method), None))
    }
}

/// The MCP methods this server serves; a request for one of them that reached
/// [`ServerHandler::on_custom_request`] had params of the wrong shape.
const SERVED_METHODS: [&str; 2] = ["tools/call", "tools/list"];

fn request_id_text(id: &rmcp::model::RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}
