//! HTTP handlers, one file per area. Handlers take `State<AppState>` and return
//! `Result<_, AppError>` (or `ApiError` for JSON); they hold no logic beyond validating
//! input, calling the course or database layer, and picking what to render.

pub mod assets;
pub mod body;
pub mod experiments;
pub mod health;
pub mod instructor;
pub mod me;
pub mod openapi;
pub mod pages;
pub mod playground;
pub mod quiz;
