//! Coding patch review: bounded manifests bound to a patch digest and repository identity,
//! and the pure derivation of `pending | accepted | rejected | superseded`.
