//! `/openapi.json`, the interactive docs at `/docs` (Swagger UI, assets
//! compiled into the binary) and `/redoc` (redirects to `/docs`).
//!
//! The description is serialized once, when the router is built, and the
//! typed document dropped: the server keeps the JSON (a few hundred kB)
//! rather than the tree of small strings and maps it was built from, and
//! serves the same bytes every time.

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use utoipa::openapi::OpenApi;
use utoipa_swagger_ui::{Config, SwaggerUi};

/// Where the description is served (and where Swagger UI reads it).
const OPENAPI_PATH: &str = "/openapi.json";

/// Routes serving the documentation of `api`.
pub fn router<S: Clone + Send + Sync + 'static>(api: OpenApi) -> Router<S> {
    let json = match serde_json::to_vec(&api) {
        Ok(bytes) => Bytes::from(bytes),
        Err(e) => {
            // The description is built from our own types: this is a bug.
            tracing::error!(error = %e, "the OpenAPI description does not serialize");
            Bytes::from_static(b"{}")
        }
    };
    drop(api);
    let swagger: Router<S> = SwaggerUi::new("/docs")
        .config(Config::new([OPENAPI_PATH]))
        .into();
    swagger
        .route(
            OPENAPI_PATH,
            get(move || {
                let json = json.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], json) }
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
