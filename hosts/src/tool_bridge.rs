//! The pi tool bridge inside `pi-provider` (SPEC §7): an MCP endpoint for this run's
//! `cursor-agent`, exposing the pi session's tools (from the request's `context.tools`).
//!
//! The endpoint (`crate::bridge_server`) runs on a thread of its own (an actix system, as the
//! bridge queue actor needs). When Cursor calls a pi tool, `on_call` gets it: the provider ends
//! the open assistant message with that call as a real pi `toolCall` (`stop_reason toolUse`), pi
//! runs its own tool, and pi's `tool_result` for the call comes back through [`ProviderBridge::result`]
//! to resolve the MCP call — inside the same, still-running Cursor run. Deadlines, cancellation
//! and diagnostics are the endpoint's (the `bridge_*` settings of the settings table).

use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use serde_json::Value;
use tokio::sync::mpsc;
use toolstream_actors::bridge::exposure::PiToolDef;
use toolstream_schemas::{Card, ToolKind};

use crate::bridge_server::{BridgeEvent, BridgeServer, BridgeServerOptions, BridgeSettings};
use crate::mcp_home::McpServer;

/// The name of the bridge in cursor-agent's MCP configuration: Cursor reports calls to it with
/// this `providerIdentifier`, and their tool names start with `pi__`.
pub const MCP_CONFIG_SERVER_NAME: &str = "pi-tools";
/// The prefix of every bridged MCP tool name (SPEC §7), declared with the exposure rules.
pub use toolstream_actors::bridge::exposure::MCP_PREFIX;

/// A pi tool call Cursor asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct BridgeCall {
    /// `cursor-pi-bridge-run-<uuid>-tool-<n>`.
    pub id: String,
    /// The real pi tool name.
    pub tool: String,
    pub args: Value,
}

/// Bridged calls that reached the bridge before the run's opening reached the front end's sink
/// (the engine behind on cursor-agent's output). Both front ends hold them here, in order, and
/// send them right after what the run said up to its opening: never dropped.
#[derive(Debug, Default)]
pub struct EarlyCalls(Vec<BridgeCall>);

impl EarlyCalls {
    pub fn hold(&mut self, call: BridgeCall) {
        tracing::debug!(call = %call.id, "a bridged call came before the run opened; it waits for the opening");
        self.0.push(call);
    }

    /// The calls held so far, in order; none are held after.
    pub fn release(&mut self) -> Vec<BridgeCall> {
        std::mem::take(&mut self.0)
    }
}

enum Command {
    Result { id: String, content: Vec<Value>, is_error: bool },
    Shutdown,
}

/// The running endpoint of one provider run.
pub struct ProviderBridge {
    server: McpServer,
    commands: mpsc::UnboundedSender<Command>,
    thread: Option<JoinHandle<()>>,
}

impl ProviderBridge {
    /// Start the endpoint for `tools` (pi-ai tool declarations) under `settings` (the table's,
    /// [`BridgeSettings::from_config`]; `serve openai` chooses its own exposure: the tools are the
    /// client's). `None` when the bridge is off (`bridge_enabled`) or exposes none of them.
    pub fn start(
        tools: &[Value],
        settings: BridgeSettings,
        on_call: impl Fn(BridgeCall) + Send + 'static,
    ) -> Result<Option<ProviderBridge>, String> {
        let defs: Vec<PiToolDef> = tools.iter().filter_map(|t| serde_json::from_value(t.clone()).ok()).collect();
        if !settings.exposure.bridge_enabled || defs.is_empty() {
            return Ok(None);
        }
        let (commands, mut inbox) = mpsc::unbounded_channel::<Command>();
        let (ready_tx, ready) = std_mpsc::channel::<Result<Option<String>, String>>();
        let thread = std::thread::Builder::new()
            .name("pi-bridge".into())
            .spawn(move || {
                actix::System::new().block_on(async move {
                    let opts = BridgeServerOptions { settings, ..Default::default() };
                    let (server, mut events) = match BridgeServer::start(opts).await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    match server.add_run(&defs).await {
                        Ok(Some(route)) => {
                            let _ = ready_tx.send(Ok(Some(route.url)));
                        }
                        Ok(None) => {
                            let _ = ready_tx.send(Ok(None));
                            server.shutdown().await;
                            return;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                            server.shutdown().await;
                            return;
                        }
                    }
                    loop {
                        tokio::select! {
                            Some(event) = events.recv() => match event {
                                BridgeEvent::Call { pi_call_id, pi_tool, args, .. } => {
                                    on_call(BridgeCall { id: pi_call_id, tool: pi_tool, args });
                                }
                                BridgeEvent::Abort { reason, .. } => {
                                    // pi runs the tool inside its own turn; it cannot be stopped
                                    // alone. Its late result is refused by the endpoint.
                                    tracing::info!(reason = reason.as_str(), "a bridged pi tool call was rejected");
                                }
                            },
                            command = inbox.recv() => match command {
                                Some(Command::Result { id, content, is_error }) => {
                                    if let Err(e) = server.pi_result(&id, content, is_error).await {
                                        tracing::warn!("pi's result for a bridged call was not taken: {e}");
                                    }
                                }
                                Some(Command::Shutdown) | None => break,
                            },
                        }
                    }
                    server.shutdown().await;
                });
            })
            .map_err(|e| format!("cannot start the pi tool bridge: {e}"))?;
        match ready.recv() {
            Ok(Ok(Some(url))) => Ok(Some(ProviderBridge {
                server: McpServer { name: MCP_CONFIG_SERVER_NAME.to_owned(), url },
                commands,
                thread: Some(thread),
            })),
            Ok(Ok(None)) => {
                let _ = thread.join();
                Ok(None)
            }
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(format!("cannot start the pi tool bridge: {e}"))
            }
            Err(_) => Err("the pi tool bridge stopped while starting".to_owned()),
        }
    }

    /// The server to give cursor-agent.
    pub fn server(&self) -> &McpServer {
        &self.server
    }

    /// The route's token: a secret the scrubber must know exactly (SPEC §8 rule 1), since it is
    /// the whole capability to call pi's tools.
    pub fn token(&self) -> Option<&str> {
        let path = self.server.url.find(crate::bridge_server::PATH_PREFIX).map(|at| &self.server.url[at..])?;
        crate::bridge_server::token_of(path)
    }

    /// pi's result for bridged call `id`.
    pub fn result(&self, id: &str, content: Vec<Value>, is_error: bool) {
        let _ = self.commands.send(Command::Result { id: id.to_owned(), content, is_error });
    }
}

impl Drop for ProviderBridge {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether a call id is a bridged pi tool call (not a replay).
pub fn is_bridge_id(id: &str) -> bool {
    id.starts_with("cursor-pi-bridge-")
}

/// Whether `card` is Cursor's record of a call it made through the pi tool bridge.
pub fn is_bridged_card(card: &Card) -> bool {
    card.source_tool.kind() == Some(ToolKind::Mcp)
        && card.args.get("toolName").and_then(|v| v.as_str()).is_some_and(|n| n.starts_with(MCP_PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge_server::route_path;
    use toolstream_actors::present::scrub::Scrubber;

    #[test]
    fn the_routes_token_is_a_known_secret_of_the_runs_scrubber() {
        let tools = [serde_json::json!({"name": "lookup", "description": "find", "parameters": {"type": "object"}})];
        let bridge = ProviderBridge::start(&tools, BridgeSettings::default(), |_| {}).unwrap().unwrap();
        let token = bridge.token().unwrap().to_owned();
        assert!(token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
        assert!(bridge.server().url.ends_with(&route_path(&token)));
        // What the provider and the OpenAI server do with it: gone from every output, the
        // assistant's own text included.
        let scrubber = Scrubber::default().with_known_secret(token.as_str());
        let said = format!("the bridge token is {token}");
        assert_eq!(scrubber.scrub_known(&said), "the bridge token is [redacted]");
    }
}
