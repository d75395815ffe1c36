//! [`BridgeQueue`]: pending bridge calls, their three lookups (pi call id, bridge call id, MCP
//! request id), deadlines, runs, cancel and dispose. Every method first rejects the calls whose
//! deadline is ≤ `now_ms` (SPEC §2: a due timer fires before the event is processed).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};
use toolstream_schemas::ids::hash8;

use super::content::normalize_content;
use super::{
    events, hashed_mcp_call_id, BridgeOut, BridgeQueueConfig, BridgeRequest, BridgeToolResult, RefuseReason, Refused,
    RejectKind, RunKey,
};

/// How many disposed run ids are remembered (requests targeting them are rejected `disposed`).
pub const DISPOSED_MEMORY: usize = 1024;

const PI_CALL_PREFIX: &str = "cursor-pi-bridge-run-";
const PI_CALL_MAX_LEN: usize = 64;

/// A call waiting for its pi result (dispatched) or for a run (held).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    pub bridge_call_id: String,
    pub mcp_request_id: String,
    pub pi_tool: String,
    pub mcp_tool: String,
    /// The run the request asked for (`None` = the newest live run).
    pub target: Option<String>,
    /// Set once dispatched: the run executing it and its pi call id.
    pub run_id: Option<String>,
    pub pi_call_id: Option<String>,
    pub queued_ms: u64,
    pub deadline_ms: u64,
    /// The arguments while held; moved into the `Dispatch` output on dispatch (then `Null`).
    pub args: Value,
}

#[derive(Debug)]
struct RunState {
    uuid: String,
    /// Number of the last pi call id issued in this run.
    tools_issued: u64,
    /// Cancelled runs take no new calls.
    cancelled: bool,
    /// Attach order: untargeted requests go to the newest live run.
    attach_seq: u64,
    /// Dispatched calls of this run (by call sequence number).
    calls: BTreeSet<u64>,
}

/// The pure core of the bridge request queue. See the module docs.
#[derive(Debug, Default)]
pub struct BridgeQueue {
    cfg: BridgeQueueConfig,
    runs: HashMap<String, RunState>,
    disposed: HashSet<String>,
    disposed_order: VecDeque<String>,
    /// All pending calls (held and dispatched), by sequence number (= queue order).
    calls: BTreeMap<u64, PendingCall>,
    by_pi: HashMap<String, u64>,
    by_bridge: HashMap<String, u64>,
    by_mcp: HashMap<String, u64>,
    /// Calls waiting for a run.
    held: BTreeSet<u64>,
    /// `(deadline, seq)` of every pending call.
    deadlines: BTreeSet<(u64, u64)>,
    next_seq: u64,
    next_attach: u64,
}

impl BridgeQueue {
    pub fn new(cfg: BridgeQueueConfig) -> Self {
        BridgeQueue { cfg, ..BridgeQueue::default() }
    }

    pub fn config(&self) -> &BridgeQueueConfig {
        &self.cfg
    }

    /// Calls dispatched to a run, waiting for their pi result.
    pub fn pending_count(&self) -> usize {
        self.calls.len() - self.held.len()
    }

    /// Calls held until a run attaches.
    pub fn queued_count(&self) -> usize {
        self.held.len()
    }

    /// The run is attached and not cancelled.
    pub fn is_live(&self, run_id: &str) -> bool {
        self.runs.get(run_id).is_some_and(|r| !r.cancelled)
    }

    /// The run was disposed (and is still remembered, see [`DISPOSED_MEMORY`]).
    pub fn is_disposed(&self, run_id: &str) -> bool {
        self.disposed.contains(run_id)
    }

    pub fn call_by_pi_id(&self, pi_call_id: &str) -> Option<&PendingCall> {
        self.by_pi.get(pi_call_id).and_then(|s| self.calls.get(s))
    }

    pub fn call_by_bridge_id(&self, bridge_call_id: &str) -> Option<&PendingCall> {
        self.by_bridge.get(bridge_call_id).and_then(|s| self.calls.get(s))
    }

    pub fn call_by_mcp_id(&self, mcp_request_id: &str) -> Option<&PendingCall> {
        self.by_mcp.get(mcp_request_id).and_then(|s| self.calls.get(s))
    }

    /// The earliest pending deadline: call [`advance`](Self::advance) at that time.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadlines.first().map(|&(d, _)| d)
    }

    /// Reject every call whose deadline is ≤ `now_ms` (`timeout`) and abort its pi execution.
    pub fn advance(&mut self, now_ms: u64) -> Vec<BridgeOut> {
        let mut out = Vec::new();
        self.expire(now_ms, &mut out);
        out
    }

    /// A run attached: it takes the held calls meant for it (its own and the untargeted ones).
    /// Attaching a run that is already attached or was disposed does nothing.
    pub fn attach_run(&mut self, run: RunKey, now_ms: u64) -> Vec<BridgeOut> {
        let mut out = Vec::new();
        self.expire(now_ms, &mut out);
        if self.runs.contains_key(&run.run_id) || self.disposed.contains(&run.run_id) {
            return out;
        }
        self.next_attach += 1;
        let state = RunState {
            uuid: run.uuid,
            tools_issued: 0,
            cancelled: false,
            attach_seq: self.next_attach,
            calls: BTreeSet::new(),
        };
        self.runs.insert(run.run_id.clone(), state);
        self.run_diagnostic(events::RUN_CREATED, &run.run_id, &mut out);
        let ready: Vec<u64> = self
            .held
            .iter()
            .copied()
            .filter(|s| {
                self.calls
                    .get(s)
                    .is_some_and(|c| c.target.is_none() || c.target.as_deref() == Some(run.run_id.as_str()))
            })
            .collect();
        for seq in ready {
            self.dispatch(seq, &run.run_id, &mut out);
        }
        out
    }

    /// Queue an MCP call: dispatched to its live run, held until its run attaches, or rejected
    /// (its run was cancelled or disposed; its ids are already pending).
    pub fn enqueue(&mut self, req: BridgeRequest, now_ms: u64) -> Vec<BridgeOut> {
        let mut out = Vec::new();
        self.expire(now_ms, &mut out);
        let call = PendingCall {
            bridge_call_id: req.bridge_call_id,
            mcp_request_id: req.mcp_request_id,
            pi_tool: req.pi_tool,
            mcp_tool: req.mcp_tool,
            target: req.run,
            run_id: None,
            pi_call_id: None,
            queued_ms: now_ms,
            deadline_ms: now_ms.saturating_add(self.cfg.call_timeout_ms),
            args: req.args,
        };
        if self.by_bridge.contains_key(&call.bridge_call_id) || self.by_mcp.contains_key(&call.mcp_request_id) {
            self.reject(call, RejectKind::Duplicate, &mut out);
            return out;
        }
        let dispatch_to = match &call.target {
            Some(t) if self.disposed.contains(t) => {
                self.reject(call, RejectKind::Disposed, &mut out);
                return out;
            }
            Some(t) => match self.runs.get(t) {
                Some(r) if r.cancelled => {
                    self.reject(call, RejectKind::Cancelled, &mut out);
                    return out;
                }
                Some(_) => Some(t.clone()),
                None => None,
            },
            None => self.newest_live_run(),
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_bridge.insert(call.bridge_call_id.clone(), seq);
        self.by_mcp.insert(call.mcp_request_id.clone(), seq);
        self.deadlines.insert((call.deadline_ms, seq));
        self.held.insert(seq);
        self.calls.insert(seq, call);
        match dispatch_to {
            Some(run_id) => {
                // Assign the pi call id first so the diagnostic can name it; emit the dispatch after.
                let dispatch = self.assign(seq, &run_id);
                self.request_diagnostic(events::REQUEST_QUEUED, seq, &mut out);
                out.extend(dispatch);
            }
            None => self.request_diagnostic(events::REQUEST_QUEUED, seq, &mut out),
        }
        out
    }

    /// A pi result for a dispatched call: resolves its MCP call. Refused when no pending call has
    /// this id (it never resolves another call) or when the call's deadline had passed.
    pub fn resolve(
        &mut self,
        pi_call_id: &str,
        result: BridgeToolResult,
        now_ms: u64,
    ) -> Result<Vec<BridgeOut>, Refused> {
        let due = self.call_by_pi_id(pi_call_id).is_some_and(|c| c.deadline_ms <= now_ms);
        let mut out = Vec::new();
        self.expire(now_ms, &mut out);
        let Some(seq) = self.by_pi.get(pi_call_id).copied() else {
            let reason = if due { RefuseReason::TimedOut } else { RefuseReason::NotPending };
            return Err(Refused { reason, outs: out });
        };
        let Some(call) = self.take(seq) else {
            return Err(Refused { reason: RefuseReason::NotPending, outs: out });
        };
        out.push(BridgeOut::Resolve {
            mcp_request_id: call.mcp_request_id.clone(),
            content: normalize_content(result.content),
            is_error: result.is_error,
        });
        let mut extra = Map::new();
        extra.insert("isError".into(), Value::Bool(result.is_error));
        self.call_diagnostic(events::REQUEST_RESOLVED, &call, extra, &mut out);
        Ok(out)
    }

    /// The MCP client cancelled its request: reject it `aborted` and abort the pi execution.
    pub fn cancel_mcp_request(&mut self, mcp_request_id: &str, now_ms: u64) -> Vec<BridgeOut> {
        let mut out = Vec::new();
        self.expire(now_ms, &mut out);
        if let Some(call) = self.by_mcp.get(mcp_request_id).copied().and_then(|s| self.take(s)) {
            self.reject(call, RejectKind::Aborted, &mut out);
        }
        out
    }

    /// The run was cancelled: reject its pending and held calls (`cancelled`), abort the dispatched
    /// ones; it takes no new calls.
    pub fn cancel_run(&mut self, run_id: &str, now_ms: u64) -> Vec<BridgeOut> {
        let mut out = Vec::new();
        self.expire(now_ms, &mut out);
        let known = self.runs.contains_key(run_id);
        let rejected = self.reject_run_calls(run_id, RejectKind::Cancelled, &mut out);
        if let Some(r) = self.runs.get_mut(run_id) {
            r.cancelled = true;
        }
        if known || rejected > 0 {
            self.run_diagnostic(events::RUN_CANCELLED, run_id, &mut out);
        }
        out
    }

    /// The run is gone: reject its pending and held calls (`disposed`), abort the dispatched ones;
    /// later results for its calls are refused and requests for it are rejected `disposed`.
    pub fn dispose_run(&mut self, run_id: &str, now_ms: u64) -> Vec<BridgeOut> {
        let mut out = Vec::new();
        self.expire(now_ms, &mut out);
        let known = self.runs.contains_key(run_id);
        let rejected = self.reject_run_calls(run_id, RejectKind::Disposed, &mut out);
        self.runs.remove(run_id);
        if self.disposed.insert(run_id.to_owned()) {
            self.disposed_order.push_back(run_id.to_owned());
            while self.disposed_order.len() > DISPOSED_MEMORY {
                if let Some(old) = self.disposed_order.pop_front() {
                    self.disposed.remove(&old);
                }
            }
        }
        if known || rejected > 0 {
            self.run_diagnostic(events::RUN_DISPOSED, run_id, &mut out);
        }
        out
    }

    // --- internals ---

    fn newest_live_run(&self) -> Option<String> {
        self.runs.iter().filter(|(_, r)| !r.cancelled).max_by_key(|(_, r)| r.attach_seq).map(|(id, _)| id.clone())
    }

    fn expire(&mut self, now_ms: u64, out: &mut Vec<BridgeOut>) {
        while let Some(&(deadline, seq)) = self.deadlines.first() {
            if deadline > now_ms {
                break;
            }
            self.deadlines.pop_first();
            if let Some(call) = self.take(seq) {
                self.reject(call, RejectKind::Timeout, out);
            }
        }
    }

    /// Reject every call of the run: dispatched to it, or held for it.
    fn reject_run_calls(&mut self, run_id: &str, kind: RejectKind, out: &mut Vec<BridgeOut>) -> usize {
        let mut seqs: BTreeSet<u64> = self.runs.get(run_id).map(|r| r.calls.clone()).unwrap_or_default();
        seqs.extend(
            self.held
                .iter()
                .copied()
                .filter(|s| self.calls.get(s).is_some_and(|c| c.target.as_deref() == Some(run_id))),
        );
        let mut n = 0;
        for seq in seqs {
            if let Some(call) = self.take(seq) {
                self.reject(call, kind, out);
                n += 1;
            }
        }
        n
    }

    /// Dispatch a held call to a live run.
    fn dispatch(&mut self, seq: u64, run_id: &str, out: &mut Vec<BridgeOut>) {
        out.extend(self.assign(seq, run_id));
    }

    /// Give a held call its pi call id in `run_id`; returns the `Dispatch` output.
    fn assign(&mut self, seq: u64, run_id: &str) -> Option<BridgeOut> {
        let run = self.runs.get_mut(run_id)?;
        let call = self.calls.get_mut(&seq)?;
        let pi_call_id = loop {
            run.tools_issued += 1;
            let id = pi_call_id(&run.uuid, run.tools_issued);
            // Two live runs with the same uuid must not share ids.
            if !self.by_pi.contains_key(&id) {
                break id;
            }
        };
        run.calls.insert(seq);
        self.held.remove(&seq);
        self.by_pi.insert(pi_call_id.clone(), seq);
        call.run_id = Some(run_id.to_owned());
        call.pi_call_id = Some(pi_call_id.clone());
        Some(BridgeOut::Dispatch {
            run_id: run_id.to_owned(),
            pi_call_id,
            pi_tool: call.pi_tool.clone(),
            args: std::mem::take(&mut call.args),
        })
    }

    /// Remove a call from every map and index.
    fn take(&mut self, seq: u64) -> Option<PendingCall> {
        let call = self.calls.remove(&seq)?;
        self.by_bridge.remove(&call.bridge_call_id);
        self.by_mcp.remove(&call.mcp_request_id);
        if let Some(id) = &call.pi_call_id {
            self.by_pi.remove(id);
        }
        if let Some(run) = call.run_id.as_ref().and_then(|r| self.runs.get_mut(r)) {
            run.calls.remove(&seq);
        }
        self.held.remove(&seq);
        self.deadlines.remove(&(call.deadline_ms, seq));
        Some(call)
    }

    /// Reject a call already taken out of the maps (or never put in).
    fn reject(&self, call: PendingCall, kind: RejectKind, out: &mut Vec<BridgeOut>) {
        let message = match kind {
            RejectKind::Timeout => format!("Cursor pi bridge CallTool timed out after {} ms", self.cfg.call_timeout_ms),
            RejectKind::Aborted => "Cursor pi bridge CallTool aborted by the MCP client".to_owned(),
            RejectKind::Cancelled => "Cursor pi bridge run cancelled".to_owned(),
            RejectKind::Disposed => "Cursor pi bridge run disposed".to_owned(),
            RejectKind::Duplicate => "Cursor pi bridge request id is already pending".to_owned(),
        };
        out.push(BridgeOut::Reject { mcp_request_id: call.mcp_request_id.clone(), kind, message });
        if let Some(id) = &call.pi_call_id {
            out.push(BridgeOut::AbortPiExecution { pi_call_id: id.clone() });
        }
        let mut extra = Map::new();
        extra.insert("rejectionKind".into(), Value::from(kind.as_str()));
        self.call_diagnostic(events::REQUEST_REJECTED, &call, extra, out);
    }

    fn counts(&self, fields: &mut Map<String, Value>) {
        fields.insert("pendingCount".into(), Value::from(self.pending_count()));
        fields.insert("queuedCount".into(), Value::from(self.queued_count()));
    }

    fn run_diagnostic(&self, event: &'static str, run_id: &str, out: &mut Vec<BridgeOut>) {
        let mut fields = Map::new();
        fields.insert("runId".into(), Value::from(run_id));
        self.counts(&mut fields);
        out.push(BridgeOut::Diagnostic { event, fields });
    }

    fn request_diagnostic(&self, event: &'static str, seq: u64, out: &mut Vec<BridgeOut>) {
        if let Some(call) = self.calls.get(&seq) {
            self.call_diagnostic(event, call, Map::new(), out);
        }
    }

    /// Allowlisted fields only (SPEC §7): never args, results, error text or the raw MCP id.
    fn call_diagnostic(
        &self,
        event: &'static str,
        call: &PendingCall,
        extra: Map<String, Value>,
        out: &mut Vec<BridgeOut>,
    ) {
        let mut fields = Map::new();
        if let Some(run) = call.run_id.as_ref().or(call.target.as_ref()) {
            fields.insert("runId".into(), Value::from(run.as_str()));
        }
        fields.insert("bridgeCallId".into(), Value::from(call.bridge_call_id.as_str()));
        fields.insert("cursorMcpCallId".into(), Value::from(hashed_mcp_call_id(&call.mcp_request_id)));
        if let Some(id) = &call.pi_call_id {
            fields.insert("piToolCallId".into(), Value::from(id.as_str()));
        }
        fields.insert("mcpToolName".into(), Value::from(call.mcp_tool.as_str()));
        fields.insert("piToolName".into(), Value::from(call.pi_tool.as_str()));
        self.counts(&mut fields);
        fields.extend(extra);
        out.push(BridgeOut::Diagnostic { event, fields });
    }
}

/// `cursor-pi-bridge-run-<uuid>-tool-<n>`, at most 64 bytes. A uuid that is empty, too long or has
/// characters outside `[A-Za-z0-9_-]` is replaced by its cleaned prefix plus `hash8(uuid)`, so
/// distinct uuids keep distinct ids.
pub(crate) fn pi_call_id(uuid: &str, n: u64) -> String {
    let suffix = format!("-tool-{n}");
    // u64 has at most 20 digits: the budget is at least 64 - 21 - 26 = 17 bytes.
    let budget = PI_CALL_MAX_LEN - PI_CALL_PREFIX.len() - suffix.len();
    let clean = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let part = if !uuid.is_empty() && uuid.len() <= budget && uuid.chars().all(clean) {
        uuid.to_owned()
    } else {
        let keep = budget.saturating_sub(8);
        let mut part: String = uuid.chars().map(|c| if clean(c) { c } else { '_' }).take(keep).collect();
        part.push_str(&hash8(uuid));
        part
    };
    format!("{PI_CALL_PREFIX}{part}{suffix}")
}

#[cfg(test)]
impl BridgeQueue {
    /// The three lookups, the held set, the deadlines and the runs' call sets agree with `calls`.
    pub(crate) fn assert_consistent(&self) {
        assert_eq!(self.by_bridge.len(), self.calls.len());
        assert_eq!(self.by_mcp.len(), self.calls.len());
        assert_eq!(self.deadlines.len(), self.calls.len());
        assert_eq!(self.by_pi.len() + self.held.len(), self.calls.len());
        for (seq, c) in &self.calls {
            assert_eq!(self.by_bridge.get(&c.bridge_call_id), Some(seq));
            assert_eq!(self.by_mcp.get(&c.mcp_request_id), Some(seq));
            assert!(self.deadlines.contains(&(c.deadline_ms, *seq)));
            match (&c.pi_call_id, &c.run_id) {
                (Some(pi), Some(run)) => {
                    assert_eq!(self.by_pi.get(pi), Some(seq));
                    assert!(!self.held.contains(seq));
                    assert!(self.runs.get(run).is_some_and(|r| r.calls.contains(seq)));
                }
                (None, None) => assert!(self.held.contains(seq)),
                _ => panic!("half-dispatched call"),
            }
        }
        let run_calls: usize = self.runs.values().map(|r| r.calls.len()).sum();
        assert_eq!(run_calls, self.by_pi.len());
    }
}
