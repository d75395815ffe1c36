//! How the OTLP sink is configured: the transport ([`Protocol`]), the endpoint and headers (from
//! the sink's argument or the standard `OTEL_EXPORTER_OTLP_*` variables), the content capture
//! mode ([`ContentCapture`]) and its scrubber, the resource's `service.name`, and the export
//! queue's limits. A plain struct: the engine's settings table reads the standard variables
//! ([`OtelEnv`]) and the command line names the sink; [`OtelConfig::new`] maps both into it.

use std::time::Duration;

use super::attrs;

pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
pub const PROTOCOL_ENV: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
pub const HEADERS_ENV: &str = "OTEL_EXPORTER_OTLP_HEADERS";
pub const SERVICE_NAME_ENV: &str = "OTEL_SERVICE_NAME";
pub const RESOURCE_ATTRIBUTES_ENV: &str = "OTEL_RESOURCE_ATTRIBUTES";

/// Spans the export queue holds before new ones are dropped (and counted): room for a burst of
/// 100,000 calls and their runs while the collector catches up (the SDK's default of 2,048 drops
/// most of such a burst).
pub const DEFAULT_QUEUE_SPANS: usize = 131_072;
/// Spans per export request.
pub const DEFAULT_BATCH_SPANS: usize = 2_048;
/// How long a checkpoint (Ctrl-C, the end) waits for the queue to reach the collector; what is
/// still queued then is counted as dropped. Half a second within the engine's end-of-run wait
/// (4 s), so the sink counts what it gives up on before the engine stops waiting for it.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_millis(3_500);
/// One export request's timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// OTLP transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP with protobuf bodies (`http/protobuf`), default port 4318.
    HttpProtobuf,
    /// gRPC (`grpc`), default port 4317.
    Grpc,
}

impl Protocol {
    /// From `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn parse(s: &str) -> Result<Protocol, ConfigError> {
        match s.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(ConfigError::Protocol(other.to_owned())),
        }
    }

    fn default_endpoint(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http://localhost:4318",
            Protocol::Grpc => "http://localhost:4317",
        }
    }
}

/// What content the sink writes (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, the
/// values of the GenAI instrumentations; `true`/`false` are the older spellings of `SPAN_ONLY` and
/// `NO_CONTENT`). Content is always scrubbed (SPEC §8) and bounded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContentCapture {
    /// No prompts, responses, arguments, results or shell lines (the default).
    #[default]
    NoContent,
    /// On the spans: the run's `gen_ai.input.messages` / `gen_ai.output.messages`, the call's
    /// `gen_ai.tool.call.arguments` / `.result`, the shell lines of its progress events.
    SpanOnly,
    /// The prompt and the response in a `gen_ai.client.inference.operation.details` event (a span
    /// event of the run's span: this sink exports no logs); tool content is a span attribute in
    /// the conventions, so this mode captures none.
    EventOnly,
    /// Both.
    SpanAndEvent,
}

impl ContentCapture {
    /// The accepted values, for errors and `toolstream config`.
    pub const CHOICES: &'static str = "NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT (or false, true)";

    pub fn parse(s: &str) -> Result<ContentCapture, ConfigError> {
        let v = s.trim();
        let is = |name: &str| v.eq_ignore_ascii_case(name);
        if v.is_empty() || is("NO_CONTENT") || is("false") {
            Ok(ContentCapture::NoContent)
        } else if is("SPAN_ONLY") || is("true") {
            Ok(ContentCapture::SpanOnly)
        } else if is("EVENT_ONLY") {
            Ok(ContentCapture::EventOnly)
        } else if is("SPAN_AND_EVENT") {
            Ok(ContentCapture::SpanAndEvent)
        } else {
            Err(ConfigError::Capture(v.to_owned()))
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContentCapture::NoContent => "NO_CONTENT",
            ContentCapture::SpanOnly => "SPAN_ONLY",
            ContentCapture::EventOnly => "EVENT_ONLY",
            ContentCapture::SpanAndEvent => "SPAN_AND_EVENT",
        }
    }

    /// Content as span attributes (and shell lines as span events).
    pub fn on_spans(self) -> bool {
        matches!(self, ContentCapture::SpanOnly | ContentCapture::SpanAndEvent)
    }

    /// The prompt and the response as an event.
    pub fn as_event(self) -> bool {
        matches!(self, ContentCapture::EventOnly | ContentCapture::SpanAndEvent)
    }

    /// Any content at all.
    pub fn any(self) -> bool {
        self != ContentCapture::NoContent
    }
}

/// Scrubs text the engine has not scrubbed already (the assistant's own text) before it leaves
/// as content: the engine's scrubber (SPEC §8), handed to the sink.
#[derive(Clone)]
pub struct TextScrub(pub std::sync::Arc<dyn Fn(&str) -> String + Send + Sync>);

impl TextScrub {
    pub fn scrub(&self, s: &str) -> String {
        (self.0)(s)
    }
}

impl std::fmt::Debug for TextScrub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextScrub")
    }
}

/// Why the sink cannot be configured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("OTEL_EXPORTER_OTLP_PROTOCOL `{0}` is not supported (http/protobuf or grpc)")]
    Protocol(String),
    #[error("OTLP endpoint `{0}` is not an http:// or https:// URL")]
    Endpoint(String),
    #[error("OTEL_EXPORTER_OTLP_HEADERS: `{0}` is not `key=value`")]
    Header(String),
    #[error("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT `{0}` is not one of NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT (or false, true)")]
    Capture(String),
}

/// The standard `OTEL_*` variables this sink follows, as the engine's settings table read them
/// (`otlp_endpoint`, `otlp_protocol`, `otlp_headers`, `otel_service_name`,
/// `otel_resource_attributes`); `None`: unset.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OtelEnv {
    pub endpoint: Option<String>,
    pub protocol: Option<String>,
    /// `OTEL_EXPORTER_OTLP_HEADERS` (may carry credentials: never in `Debug`).
    pub headers: Option<String>,
    pub service_name: Option<String>,
    pub resource_attributes: Option<String>,
}

impl std::fmt::Debug for OtelEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelEnv")
            .field("endpoint", &self.endpoint)
            .field("protocol", &self.protocol)
            .field("headers", &self.headers.as_ref().map(|_| "(set)"))
            .field("service_name", &self.service_name)
            .field("resource_attributes", &self.resource_attributes)
            .finish()
    }
}

/// Everything the sink needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtelConfig {
    pub protocol: Protocol,
    /// The collector's base URL (`http://host:4318`); HTTP appends `/v1/traces`, `/v1/metrics`.
    pub endpoint: String,
    /// `OTEL_EXPORTER_OTLP_HEADERS` is checked here (a malformed one stops the sink from
    /// opening) and applied by the exporter itself, which reads it for both transports.
    pub headers_checked: usize,
    /// What content is written: the engine's setting `otel_capture_content` (SPEC §9.7), which
    /// [`OtelConfig::new`] leaves at its default.
    pub capture_content: ContentCapture,
    /// The resource's `service.name`.
    pub service_name: String,
    pub queue_spans: usize,
    pub batch_spans: usize,
    pub flush_timeout: Duration,
    /// Export metrics too (tool calls, tool duration, tokens).
    pub metrics: bool,
}

impl OtelConfig {
    /// The configuration for `--sink otlp[=URL]` (`protocol: None`: from the environment) or
    /// `--sink otlp-grpc[=URL]`, under the standard variables `env`. (The exporter applies
    /// `OTEL_EXPORTER_OTLP_HEADERS`, and the resource `OTEL_RESOURCE_ATTRIBUTES`, from the
    /// process's environment, which is where the settings table read them.)
    pub fn new(endpoint: Option<&str>, protocol: Option<Protocol>, env: &OtelEnv) -> Result<OtelConfig, ConfigError> {
        let set = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
        let protocol = match (protocol, endpoint, set(&env.protocol)) {
            (Some(p), _, _) => p,
            // An explicit `otlp=URL` is HTTP/protobuf, whatever the environment says.
            (None, Some(_), _) | (None, None, None) => Protocol::HttpProtobuf,
            (None, None, Some(p)) => Protocol::parse(&p)?,
        };
        let endpoint = match endpoint {
            Some(e) => e.to_owned(),
            None => set(&env.endpoint).unwrap_or_else(|| protocol.default_endpoint().to_owned()),
        };
        let endpoint = endpoint.trim().trim_end_matches('/').to_owned();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(ConfigError::Endpoint(endpoint));
        }
        let headers_checked = match set(&env.headers) {
            Some(h) => parse_headers(&h)?.len(),
            None => 0,
        };
        Ok(OtelConfig {
            protocol,
            endpoint,
            headers_checked,
            capture_content: ContentCapture::NoContent,
            service_name: service_name(env),
            queue_spans: DEFAULT_QUEUE_SPANS,
            batch_spans: DEFAULT_BATCH_SPANS,
            flush_timeout: DEFAULT_FLUSH_TIMEOUT,
            metrics: true,
        })
    }

    /// The URL spans are sent to.
    pub fn traces_url(&self) -> String {
        match self.protocol {
            Protocol::HttpProtobuf => format!("{}/v1/traces", self.endpoint),
            Protocol::Grpc => self.endpoint.clone(),
        }
    }

    /// The URL metrics are sent to.
    pub fn metrics_url(&self) -> String {
        match self.protocol {
            Protocol::HttpProtobuf => format!("{}/v1/metrics", self.endpoint),
            Protocol::Grpc => self.endpoint.clone(),
        }
    }
}

/// `OTEL_SERVICE_NAME`, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else `toolstream`.
pub fn service_name(env: &OtelEnv) -> String {
    if let Some(name) = env.service_name.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        return name.to_owned();
    }
    let from_attributes = env.resource_attributes.as_deref().and_then(|attrs| {
        attrs.split(',').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k.trim() == "service.name" && !v.trim().is_empty()).then(|| percent_decode(v.trim()))
        })
    });
    from_attributes.unwrap_or_else(|| attrs::DEFAULT_SERVICE_NAME.to_owned())
}

/// `k1=v1,k2=v2` (values percent-decoded, as the OTLP exporter spec says).
pub fn parse_headers(s: &str) -> Result<Vec<(String, String)>, ConfigError> {
    s.split(',')
        .filter(|kv| !kv.trim().is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), percent_decode(v.trim()))),
            _ => Err(ConfigError::Header(kv.trim().to_owned())),
        })
        .collect()
}

/// `%XX` escapes decoded (a malformed escape is kept as it is).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
