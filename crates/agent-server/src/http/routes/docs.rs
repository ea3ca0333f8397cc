//! `/openapi.json`, the interactive docs at `/docs` (Swagger UI, assets
//! compiled into the binary) and `/redoc` (redirects to `/docs`).
//!
//! The description is built on the first request for it, not with the
//! router (see `http::route_docs`): building it runs the schema code of
//! every documented type, which a server that is never asked for its
//! description should not pay for at start-up, in time or memory. It is
//! built and serialized once, off the runtime, and the typed document
//! dropped: the server keeps the JSON (a few hundred kB) and serves the
//! same bytes every time.

use crate::http::error::ApiError;
use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::sync::Arc;
use tokio::sync::OnceCell;
use utoipa::openapi::OpenApi;
use utoipa_swagger_ui::{Config, SwaggerUi};

/// Where the description is served (and where Swagger UI reads it).
const OPENAPI_PATH: &str = "/openapi.json";

/// The description: how to build it, and its JSON once built.
struct Description {
    build: Box<dyn Fn() -> OpenApi + Send + Sync>,
    json: OnceCell<Bytes>,
}

impl Description {
    /// The description's JSON, built on the first call.
    async fn json(self: Arc<Self>) -> Result<Bytes, ApiError> {
        let this = Arc::clone(&self);
        let json = self
            .json
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || serde_json::to_vec(&(this.build)()))
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "building the OpenAPI description failed");
                        ApiError::internal("building the OpenAPI description failed")
                    })?
                    .map(Bytes::from)
                    .map_err(|e| {
                        // The description is built from our own types: this is a bug.
                        tracing::error!(error = %e, "the OpenAPI description does not serialize");
                        ApiError::internal("the OpenAPI description does not serialize")
                    })
            })
            .await?;
        Ok(json.clone())
    }
}

/// Routes serving the documentation that `describe` builds.
pub fn router<S: Clone + Send + Sync + 'static>(
    describe: impl Fn() -> OpenApi + Send + Sync + 'static,
) -> Router<S> {
    let description = Arc::new(Description {
        build: Box::new(describe),
        json: OnceCell::new(),
    });
    let swagger: Router<S> = SwaggerUi::new("/docs")
        .config(Config::new([OPENAPI_PATH]))
        .into();
    swagger
        .route(
            OPENAPI_PATH,
            get(move || {
                let description = Arc::clone(&description);
                async move {
                    description
                        .json()
                        .await
                        .map(|json| ([(header::CONTENT_TYPE, "application/json")], json))
                }
            }),
        )
        .route(
            "/redoc",
            get(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, "/docs/")],
                )
                    .into_response()
            }),
        )
}
