//! Routing and status mapping for the fetch-style artifact handler
//! (`createArtifactHandler`). Pure Rust: the request/response plumbing lives in
//! `js/http.js`; this module decides which route a method + path is, whether the ids
//! and the body are acceptable, and which status an error becomes.

pub mod authorize;
pub mod body;
pub mod drafts;
pub mod route;
pub mod status;

pub use authorize::check_authorization;
pub use body::{check_body, check_content_type, RESERVED_KEYS};
pub use route::{
    match_route, route_error_response, validate_base_path, Operation, RouteError, DEFAULT_BASE_PATH,
};
pub use status::{status_for_reason, HttpError, CODE_STATUSES};
