//! HTTP handlers, one file per area. Handlers take `State<AppState>` and return
//! `Result<_, AppError>` (or `ApiError` for JSON); they hold no logic beyond validating
//! input, calling the course, database or engine layer, and picking what to render.

pub mod assets;
pub mod class_round;
pub mod experiments;
pub mod gpu_runs;
pub mod health;
pub mod instructor;
pub mod instructor_cockpit;
pub mod instructor_exports;
pub mod learner;
pub mod lint;
pub mod me;
pub mod notebooks;
pub mod pages;
pub mod playground;
pub mod quiz;
pub mod resume;
