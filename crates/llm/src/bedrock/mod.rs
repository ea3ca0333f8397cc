//! AWS Bedrock through the Converse API (`bedrock/<model id>`): `auth`
//! resolves the endpoint, model id, region and credentials; `sigv4` signs
//! requests; `converse` holds the request, reply and stream-event shapes;
//! `event_stream` decodes ConverseStream's binary framing.

pub mod auth;
pub mod converse;
pub mod event_stream;
pub mod sigv4;
