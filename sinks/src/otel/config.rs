//! How the OTLP sink is configured: the transport ([`Protocol`]), the endpoint and headers (from
//! the sink's argument or the standard `OTEL_EXPORTER_OTLP_*` variables), the content opt-in, the
//! resource's `service.name`, and the export queue's limits. A plain struct: the engine's config
//! layer and the command line map into it; [`OtelConfig::from_env`] reads the environment through
//! a function so tests never mutate theirs.

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

/// Why the sink cannot be configured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("OTEL_EXPORTER_OTLP_PROTOCOL `{0}` is not supported (http/protobuf or grpc)")]
    Protocol(String),
    #[error("OTLP endpoint `{0}` is not an http:// or https:// URL")]
    Endpoint(String),
    #[error("OTEL_EXPORTER_OTLP_HEADERS: `{0}` is not `key=value`")]
    Header(String),
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
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
    pub capture_content: bool,
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
    /// `--sink otlp-grpc[=URL]`, reading the environment through `env`.
    pub fn from_env(
        endpoint: Option<&str>,
        protocol: Option<Protocol>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<OtelConfig, ConfigError> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let protocol = match (protocol, endpoint, set(PROTOCOL_ENV)) {
            (Some(p), _, _) => p,
            // An explicit `otlp=URL` is HTTP/protobuf, whatever the environment says.
            (None, Some(_), _) | (None, None, None) => Protocol::HttpProtobuf,
            (None, None, Some(p)) => Protocol::parse(&p)?,
        };
        let endpoint = match endpoint {
            Some(e) => e.to_owned(),
            None => set(ENDPOINT_ENV).unwrap_or_else(|| protocol.default_endpoint().to_owned()),
        };
        let endpoint = endpoint.trim().trim_end_matches('/').to_owned();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(ConfigError::Endpoint(endpoint));
        }
        let headers_checked = match set(HEADERS_ENV) {
            Some(h) => parse_headers(&h)?.len(),
            None => 0,
        };
        let capture_content = env(attrs::CAPTURE_CONTENT_ENV).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        Ok(OtelConfig {
            protocol,
            endpoint,
            headers_checked,
            capture_content,
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
pub fn service_name(env: &dyn Fn(&str) -> Option<String>) -> String {
    if let Some(name) = env(SERVICE_NAME_ENV).map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()) {
        return name;
    }
    let from_attributes = env(RESOURCE_ATTRIBUTES_ENV).and_then(|attrs| {
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
