//! The route table: each route is added from the `#[utoipa::path]` attribute of its handler,
//! which gives its method and path template, and the same attribute's operation goes into the
//! document's paths. A route cannot be served without being documented, nor documented without
//! being served.

use crate::state::AppState;
use axum::handler::Handler;
use axum::routing::{on, MethodFilter};
use axum::Router;
use utoipa::__dev::Tags;
use utoipa::openapi::path::{HttpMethod, Paths};

/// The router and the document's paths, built together.
pub(super) struct Table {
    pub(super) router: Router<AppState>,
    pub(super) paths: Paths,
}

impl Table {
    pub(super) fn new() -> Self {
        Self {
            router: Router::new(),
            paths: Paths::new(),
        }
    }

    /// Serves `handler` at the path and methods its operation `P` declares.
    pub(super) fn add<P, H, T>(self, handler: H) -> Self
    where
        P: utoipa::Path + for<'t> Tags<'t>,
        H: Handler<T, AppState>,
        T: 'static,
    {
        let path = P::path();
        self.route::<P, H, T>(&path, handler)
    }

    /// Like [`Table::add`], for an operation whose last path parameter takes the rest of the
    /// path, slashes included: OpenAPI writes it `{name}`, the router `{*name}`.
    pub(super) fn add_rest<P, H, T>(self, handler: H) -> Self
    where
        P: utoipa::Path + for<'t> Tags<'t>,
        H: Handler<T, AppState>,
        T: 'static,
    {
        let path = P::path();
        let template = match path.rfind('{') {
            Some(at) => format!("{}{{*{}", &path[..at], &path[at + 1..]),
            None => path.clone(),
        };
        self.route::<P, H, T>(&template, handler)
    }

    fn route<P, H, T>(mut self, template: &str, handler: H) -> Self
    where
        P: utoipa::Path + for<'t> Tags<'t>,
        H: Handler<T, AppState>,
        T: 'static,
    {
        let methods = P::methods();
        let filter = methods
            .iter()
            .map(filter_of)
            .reduce(MethodFilter::or)
            .unwrap_or(MethodFilter::GET);
        // axum merges the methods of routes added for the same template.
        self.router = self.router.route(template, on(filter, handler));
        // The `tag` of the attribute comes through the derive's own trait, as the derive of a
        // whole document takes it.
        let mut operation = P::operation();
        let tags = operation.tags.get_or_insert_with(Vec::new);
        tags.extend(P::tags().into_iter().map(str::to_owned));
        self.paths.add_path_operation(P::path(), methods, operation);
        self
    }
}

fn filter_of(method: &HttpMethod) -> MethodFilter {
    match method {
        HttpMethod::Get => MethodFilter::GET,
        HttpMethod::Post => MethodFilter::POST,
        HttpMethod::Put => MethodFilter::PUT,
        HttpMethod::Delete => MethodFilter::DELETE,
        HttpMethod::Options => MethodFilter::OPTIONS,
        HttpMethod::Head => MethodFilter::HEAD,
        HttpMethod::Patch => MethodFilter::PATCH,
        HttpMethod::Trace => MethodFilter::TRACE,
    }
}
