//! Why a server's transport could not be opened: its headers, HTTP client,
//! event stream, process or stored OAuth state. The text becomes the
//! detail of [`crate::client::McpError::Start`].

/// Why a transport to an MCP server could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransportError {
    /// A configured header's name is not a header name.
    #[error("invalid header name '{name}': {source}")]
    HeaderName {
        /// The name as configured.
        name: String,
        /// The parser's complaint.
        source: reqwest::header::InvalidHeaderName,
    },
    /// A configured header's value cannot be sent.
    #[error("invalid value of header '{name}': {source}")]
    HeaderValue {
        /// The header.
        name: String,
        /// The parser's complaint.
        source: reqwest::header::InvalidHeaderValue,
    },
    /// No HTTP client could be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] openhands_client::ClientError),
    /// The server URL does not parse.
    #[error("invalid url '{url}': {source}")]
    Url {
        /// The URL.
        url: String,
        /// The parser's complaint.
        source: url::ParseError,
    },
    /// Opening the event stream failed.
    #[error("GET {url} failed: {source}")]
    Get {
        /// The server.
        url: String,
        /// The request's error.
        source: reqwest::Error,
    },
    /// The event stream was refused.
    #[error("GET {url} answered {status}")]
    Status {
        /// The server.
        url: String,
        /// The answer's status.
        status: reqwest::StatusCode,
    },
    /// The `endpoint` event names no usable URL.
    #[error("invalid endpoint '{endpoint}': {source}")]
    Endpoint {
        /// The event's data.
        endpoint: String,
        /// The parser's complaint.
        source: url::ParseError,
    },
    /// The event stream broke (the stream's error).
    #[error("the event stream of {url} failed: {detail}")]
    Stream {
        /// The server.
        url: String,
        /// What the event-stream reader said.
        detail: String,
    },
    /// The event stream ended before naming its endpoint.
    #[error("the event stream of {0} ended before its endpoint")]
    NoEndpoint(String),
    /// The server's `env` cannot be passed on.
    #[error("invalid 'env': {0}")]
    Env(#[source] openhands_workspace::exec::EnvError),
    /// The server's working directory is missing.
    #[error("working directory {} does not exist", .0.display())]
    NoWorkingDir(std::path::PathBuf),
    /// The server's command could not be started.
    #[error("cannot run '{command}': {source}")]
    Spawn {
        /// The command.
        command: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The stored OAuth tokens are missing or cannot be refreshed (the
    /// reference's wording).
    #[error(
        "MCP server {0} must be authorized again: its stored OAuth tokens are missing or could not be refreshed."
    )]
    Reauthorize(String),
    /// OAuth could not be set up for the server.
    #[error("OAuth {step} failed: {source}")]
    OAuth {
        /// `setup`, `discovery` or `client setup`.
        step: &'static str,
        /// rmcp's error (boxed: it is large).
        source: Box<rmcp::transport::auth::AuthError>,
    },
    /// No access token could be had.
    #[error("OAuth token unavailable: {0}")]
    Token(#[source] Box<rmcp::transport::auth::AuthError>),
}

/// Header `name: value` as configured for a server, parsed for sending.
pub(crate) fn parse_header(
    name: &str,
    value: &str,
) -> Result<(reqwest::header::HeaderName, reqwest::header::HeaderValue), TransportError> {
    let header_name =
        reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|source| {
            TransportError::HeaderName {
                name: name.to_string(),
                source,
            }
        })?;
    let header_value = reqwest::header::HeaderValue::from_str(value).map_err(|source| {
        TransportError::HeaderValue {
            name: name.to_string(),
            source,
        }
    })?;
    Ok((header_name, header_value))
}
