//! HTTP handlers, one file per area. Handlers take `State<AppState>` and return
//! `Result<_, AppError>`; they hold no logic beyond picking what to render.

pub mod assets;
pub mod pages;
