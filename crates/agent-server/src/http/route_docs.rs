//! Routes registered with their OpenAPI description only when someone asks
//! for it.
//!
//! utoipa-axum's `routes!` builds each handler's whole operation (parameters,
//! responses, every schema it references) while the router is assembled.
//! For the ~200 documented routes of this server that is most of the code
//! run at start-up and most of the memory allocated then, for a description
//! that is read, if ever, by `/openapi.json`. The [`routes!`] here registers
//! the same routes under the same paths and methods and leaves each
//! operation empty, unless the router is being built inside [`describe`]:
//! `/openapi.json` builds the routes once more that way on its first
//! request (see `routes::docs`), so the description served is the one of
//! the routes served.

use axum::handler::Handler;
use axum::routing::MethodRouter;
use std::cell::Cell;
use utoipa::openapi::{HttpMethod, OpenApi};
use utoipa_axum::PathItemExt;
use utoipa_axum::router::OpenApiRouter;

thread_local! {
    /// Whether routes built on this thread carry their full description.
    static DESCRIBING: Cell<bool> = const { Cell::new(false) };
}

/// Whether routes built now carry their full OpenAPI description (inside
/// [`describe`]).
pub fn describing() -> bool {
    DESCRIBING.with(Cell::get)
}

/// Runs `build` with full descriptions: every [`routes!`] and [`documented`]
/// inside it (on this thread) registers its operations and schemas.
pub fn describe<T>(build: impl FnOnce() -> T) -> T {
    /// Restores the mode in force before, also if `build` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            DESCRIBING.with(|describing| describing.set(self.0));
        }
    }
    let _restore = Restore(DESCRIBING.with(|describing| describing.replace(true)));
    build()
}

/// An empty router starting from the description `doc` (its info,
/// components and security schemes) when describing, from nothing
/// otherwise.
pub fn documented<S>(doc: impl FnOnce() -> OpenApi) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    if describing() {
        OpenApiRouter::with_openapi(doc())
    } else {
        OpenApiRouter::new()
    }
}

/// `router` answering `methods` with `handler` (what utoipa-axum's
/// `routes!` does with a handler's documented methods).
pub fn on_methods<H, T, S>(
    router: MethodRouter<S>,
    methods: &[HttpMethod],
    handler: H,
) -> MethodRouter<S>
where
    H: Handler<T, S>,
    T: 'static,
    S: Clone + Send + Sync + 'static,
{
    methods.iter().fold(router, |router, method| {
        router.on(method.to_method_filter(), handler.clone())
    })
}

/// utoipa-axum's `routes!` (same arguments, same value) that builds the
/// handlers' operations only inside [`describe`]; otherwise each path gets
/// its methods with an empty operation, which is all the router needs.
macro_rules! routes {
    // Handlers as paths of identifiers (not `path` fragments), which
    // utoipa-axum's macro can take apart to find each handler's
    // `__path_` type.
    ($($($segment:ident)::+),+ $(,)?) => {
        if $crate::http::route_docs::describing() {
            utoipa_axum::routes!($($($segment)::+),+)
        } else {
            let mut paths = utoipa::openapi::path::Paths::new();
            let mut method_router = axum::routing::MethodRouter::new();
            $(
                let path: String = utoipa_axum::routes!(@path [path()] of $($segment)::+);
                let methods: Vec<utoipa::openapi::HttpMethod> =
                    utoipa_axum::routes!(@path [methods()] of $($segment)::+);
                method_router = $crate::http::route_docs::on_methods(
                    method_router,
                    &methods,
                    $($segment)::+,
                );
                paths.add_path_operation(&path, methods, utoipa::openapi::path::Operation::new());
            )+
            (Vec::new(), paths, method_router)
        }
    };
}

pub(crate) use routes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_sets_the_mode_for_its_closure_only_and_nests() {
        assert!(!describing());
        let inner = describe(|| {
            assert!(describing());
            describe(describing) && describing()
        });
        assert!(inner);
        assert!(!describing());
    }

    #[test]
    fn describe_restores_the_mode_when_the_build_panics() {
        let result = std::panic::catch_unwind(|| describe::<()>(|| panic!("boom")));
        assert!(result.is_err());
        assert!(!describing());
    }
}
