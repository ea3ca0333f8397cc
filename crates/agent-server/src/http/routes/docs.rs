//! `/openapi.json`, the interactive docs at `/docs` (Swagger UI, assets
//! compiled into the binary) and `/redoc` (redirects to `/docs`).

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use utoipa::openapi::OpenApi;
use utoipa_swagger_ui::SwaggerUi;

/// Routes serving the documentation of `api`.
pub fn router<S: Clone + Send + Sync + 'static>(api: OpenApi) -> Router<S> {
    let swagger: Router<S> = SwaggerUi::new("/docs").url("/openapi.json", api).into();
    swagger.route(
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
