//! GPU Lab: a browser course on how GPUs behave under model training, served by one binary.
//!
//! Data flows one way: **request → web → classroom → engine → experiment → device**,
//! and results flow back as typed values. Nothing lower imports anything higher. A tour
//! of the modules, in the order a request meets them:
//!
//! - [`config`]: everything `gpulab serve` can be told — flags, `GPULAB_*` environment
//!   variables and defaults, each written once — and [`config::Limits`], every cap.
//! - [`web`]: HTTP. The router and `serve`, the student cookie, body decoding, the one
//!   error type, typed askama pages, embedded static files, the generated OpenAPI
//!   document, and the handlers (pages, quizzes, the learner's path — search, code
//!   downloads, completion, the tuning labs' page —, instructor, the student's data, experiments, playground,
//!   health and `/metrics`) around one shared `AppState`; who may use the instructor's
//!   routes ([`web::instructor_access`]); the per-address write budget
//!   ([`web::guard`]). Handlers parse, call the class's domain and render.
//! - [`classroom`]: the class's shared domain, with no HTTP in it, behind one handle
//!   built at start-up ([`classroom::Classroom`]): a class round's state machine
//!   ([`classroom::round`], revealed by the worker that measured it);
//!   hardware-graded quiz questions against the class's own measurements
//!   ([`classroom::measurements`]); the learners' calibration and the class's view per
//!   question ([`classroom::calibration`]); the gradebook's read model and table
//!   ([`classroom::gradebook`]); a playground prediction scored and stored
//!   ([`classroom::predictions`]); a quiz attempt graded and kept
//!   ([`classroom::quizzes`]); the learner's path through the course
//!   ([`classroom::learner_flow`]).
//! - [`ratelimit`]: the per-student rates (a keyed `governor` limiter); experiments'
//!   binds only while other students' experiments wait ([`db::fair_share`]).
//! - [`metrics`]: the Prometheus registry; reads the engine at scrape time.
//! - [`course`]: the course itself. Lessons are read from `content/` (embedded in the
//!   binary, or a folder given on the command line), passed through a chain of
//!   preprocessors (front matter, directives, highlighting, math, heading anchors, link
//!   checks, sourced figures and cited footnotes, size units that match the experiments'
//!   own sizes) and rendered to HTML once, at start-up, with each lesson's outline (its
//!   sections and code) for the search index and the `.py`/`.ipynb` downloads. Quiz
//!   answers are read and graded here too. `gpulab check` runs the same chain. The
//!   course's notebooks (`course::notebooks`: the Colab one) are checked and served as
//!   downloads; a learner's own `gpulab bench all --json` upload is checked here
//!   (`course::learner_runs`) before the About page's form stores it for them.
//! - [`lint`]: the script doctor. A learner's own training script, parsed (never run)
//!   with tree-sitter's Python grammar, checked against the course's pitfalls with each
//!   finding's place computed (the step loop, calls followed into the script's own
//!   functions, what runs at import), its lesson section, experiment and checked
//!   source; `noqa` comments, rule selection and `[tool.gpulab]`, PEP 263 encodings,
//!   and text, JSON, GitHub and SARIF output; used by the "Check your script" page,
//!   `POST /api/lint` and `gpulab lint`.
//! - [`db`]: the database — a SQLite file (WAL, migrated on start-up after a copy at its
//!   old version is written beside it; a newer version's database is refused) or PostgreSQL, one
//!   SQL surface for both — of students, quiz attempts and answers, resume codes,
//!   predictions, the run history and the latest measurements, tuning-lab attempts
//!   ([`db::lab_attempts`]), learners' own GPU runs ([`db::learner_runs`]), instructor sign-ins,
//!   class rounds, and the experiment queue ([`db::jobs`], [`db::job_claims`]); the
//!   instructor's gradebook queries; whether it takes writes (a full disk, a read-only
//!   or removed file: a 503 that saves nothing, reported by `/readyz` and `/metrics`),
//!   and consistent backups while the class runs. All SQL lives here.
//! - [`engine`]: the workers that serve the experiment queue, each owning a backend (the
//!   GPU, or the CPU when there is none), all running one loop
//!   ([`engine::worker_loop`]) that claims a job, runs it under a lease and records its
//!   typed outcome ([`engine::outcome`]) in one transaction, which also reveals the
//!   class round the job ran; what handlers read of the queue ([`engine::queue_view`]);
//!   provenance; `gpulab selftest`. The class's state is the
//!   database's in both modes:
//!   - **one box** (`gpulab serve`, SQLite by default): the workers are threads of the
//!     server, woken in-process when a job is queued; the allocator playgrounds live in
//!     this process.
//!   - **a class on several machines** (`serve --role web` nodes and one `gpulab worker`
//!     per GPU, sharing PostgreSQL): web nodes queue jobs and answer polls, workers claim
//!     them with `SKIP LOCKED` and wake on `NOTIFY`; each student's playground lives in
//!     one worker ([`playground::remote`]). Where playgrounds live is decided once, at
//!     start-up ([`playground::remote::Home`]); no handler asks which mode it is in.
//! - [`playground`]: lesson 7's memory snapshot and per-student allocator playgrounds,
//!   run by a pure model of PyTorch's caching allocator (segments, splitting, pools,
//!   expandable segments, the memory_viz snapshot) over real device or host memory.
//! - [`experiments`]: one module per live experiment behind one trait, and the registry
//!   from which routes, CLI commands, OpenAPI paths, lesson directives, panel bounds,
//!   bad-input tests and selftests are derived; `experiments::trace` writes a run's
//!   timeline in the Chrome Trace Event format, carried inside its typed result;
//!   `experiments::labs` are the tuning labs (graded by measurement, with runs recorded
//!   on real machines re-graded in its tests);
//!   `experiments::ceilings` measures this device's own ceilings once per server start
//!   (on the engine's first worker, or in each `gpulab worker`, which stores them in
//!   [`db::worker_ceilings`] for the web nodes), which `/api/device` serves beside
//!   datasheet peaks.
//! - [`gpu`]: the only code that talks to CUDA and the only `unsafe`: library loading
//!   (and where it searches), which GPU a worker takes, the device handle and streams,
//!   kernels (compiled once per process) and their typed launchers, every GEMM,
//!   CUDA-event clocks, device memory, the device card and the doctor;
//!   `gpu::copies` holds a pinned buffer for as long as a copy may read or fill it,
//!   and `gpu::standin` is the CPU's asynchronous stand-in for a GPU's copy queue,
//!   on which CPU servers and CI run the start-up self-test's round trip.
//!   `experiments::training::profile` times one training step kernel by kernel
//!   against this GPU's ceilings.
//! - [`cpu`]: the CPU reference math every GPU path is checked against.
//! - [`measure`]: medians and spreads, deadlines, the one timing loop, the
//!   calibration that warms a device up before sizing a busy loop to a target time, and
//!   a clock wrapper that keeps every timed interval for a run's trace.
//! - [`spread`]: quartiles, outlier fences and the rule that says a timed point settled.
//! - [`host`], [`format`]: the host machine (CPU, memory, name) on every OS (and its CPU SGEMM
//!   reference against OpenBLAS, [`host::blas_reference`], when one was recorded here); number formatting
//!   shared by terminal tables and lesson fallbacks.

pub mod classroom;
pub mod config;
pub mod course;
pub mod cpu;
pub mod db;
pub mod engine;
pub mod experiments;
pub mod format;
pub mod gpu;
pub mod host;
pub mod lint;
pub mod measure;
pub mod metrics;
pub mod playground;
pub mod ratelimit;
pub mod spread;
pub mod web;
