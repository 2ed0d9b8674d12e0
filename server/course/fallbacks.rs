//! The no-JavaScript fallback of every directive: a static table computed from the
//! directive's parameters, or a short text saying what the widget or experiment shows.
//! The numbers here are computed, not typed, so they always match the parameters.

use super::html::escape;
use crate::format::thousands;

/// A directive's parameters (its TOML body, as `directives` reads it).
type Params = toml::Table;

fn num(params: &Params, key: &str, default: f64) -> f64 {
    match params.get(key) {
        Some(toml::Value::Integer(i)) => *i as f64,
        Some(toml::Value::Float(f)) => *f,
        _ => default,
    }
}

fn text<'a>(params: &'a Params, key: &str, default: &'a str) -> &'a str {
    params
        .get(key)
        .and_then(toml::Value::as_str)
        .unwrap_or(default)
}

fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut html = String::from("<table>\n<thead><tr>");
    for h in head {
        html.push_str(&format!("<th scope=\"col\">{}</th>", escape(h)));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        html.push_str("<tr>");
        for cell in row {
            html.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table>\n");
    html
}

fn para(text: &str) -> String {
    format!("<p>{}</p>\n", escape(text))
}

/// Rounds needed to finish `tasks` equal tasks on `cores` cores.
pub fn rounds(tasks: f64, cores: f64) -> f64 {
    (tasks / cores.max(1.0)).ceil()
}

pub(super) fn parallel_race(p: &Params) -> String {
    let tasks = num(p, "tasks", 1024.0);
    let cpu = num(p, "cpu_cores", 8.0);
    let gpu = num(p, "gpu_cores", 256.0);
    let (cpu_rounds, gpu_rounds) = (rounds(tasks, cpu), rounds(tasks, gpu));
    para(&format!(
        "{} equal, independent tasks. Each core finishes one task per round.",
        thousands(tasks)
    )) + &table(
        &["Workers", "Cores", "Rounds needed"],
        &[
            vec!["CPU".into(), thousands(cpu), thousands(cpu_rounds)],
            vec!["GPU".into(), thousands(gpu), thousands(gpu_rounds)],
        ],
    ) + &para(&format!(
        "If a round took the same time on both, the GPU would finish {:.0}× sooner. Real GPU cores are slower one by one, which is why the win needs many tasks.",
        cpu_rounds / gpu_rounds
    ))
}

/// Amdahl's law: speedup of a job whose fraction `p` runs in parallel on `n` workers.
pub fn amdahl_speedup(p: f64, n: f64) -> f64 {
    1.0 / ((1.0 - p) + p / n)
}

pub(super) fn amdahl(params: &Params) -> String {
    let p = num(params, "p", 0.95);
    let rows: Vec<Vec<String>> = [1.0, 2.0, 8.0, 64.0, 1024.0, 10_000.0]
        .iter()
        .map(|&n| vec![thousands(n), format!("{:.2}×", amdahl_speedup(p, n))])
        .collect();
    para(&format!(
        "Speedup S = 1 / ((1 − p) + p / N) with p = {p} of the work parallel:"
    )) + &table(&["Cores N", "Speedup S"], &rows)
        + &para(&format!(
            "However many cores you add, the speedup stays below 1 / (1 − p) = {:.1}×.",
            1.0 / (1.0 - p)
        ))
}

pub(super) fn gpu_architecture(p: &Params) -> String {
    let sms = num(p, "sms", 108.0);
    let per_sm = num(p, "cores_per_sm", 64.0);
    para(&format!(
        "{} streaming multiprocessors × {} FP32 cores each = {} CUDA cores. A kernel's blocks are handed out to SMs as SMs free up; a block never moves once it starts.",
        thousands(sms),
        thousands(per_sm),
        thousands(sms * per_sm)
    ))
}

pub(super) fn thread_hierarchy(p: &Params) -> String {
    let blocks = num(p, "grid_blocks", 4.0);
    let threads = num(p, "block_threads", 256.0);
    table(
        &["Level", "How many", "Shares"],
        &[
            vec![
                "Grid".into(),
                format!("{} blocks", thousands(blocks)),
                "global memory".into(),
            ],
            vec![
                "Block".into(),
                format!("{} threads", thousands(threads)),
                "shared memory and __syncthreads()".into(),
            ],
            vec![
                "Warp".into(),
                format!(
                    "32 threads ({} warps per block)",
                    thousands((threads / 32.0).ceil())
                ),
                "one instruction at a time".into(),
            ],
            vec![
                "Thread".into(),
                format!("{} in the grid", thousands(blocks * threads)),
                "its own registers".into(),
            ],
        ],
    ) + &para("Each thread finds its element with i = blockIdx.x × blockDim.x + threadIdx.x.")
}

pub(super) fn memory_ladder(_: &Params) -> String {
    para(
        "A100 figures, fastest first (latencies measured with dependent loads; see the sources below):",
    ) + &table(
        &["Level", "Latency", "Size", "Scope"],
        &[
            vec![
                "Registers".into(),
                "part of the instruction; a dependent FMA ~4 cycles".into(),
                "256 KiB per SM".into(),
                "one thread".into(),
            ],
            vec![
                "Shared memory / L1".into(),
                "~23 cycles (an L1 hit ~33)".into(),
                "192 KiB per SM (up to 164 KiB as shared memory)".into(),
                "one block".into(),
            ],
            vec![
                "L2 cache".into(),
                "~200 cycles".into(),
                "40 MiB".into(),
                "whole GPU".into(),
            ],
            vec![
                "HBM (global memory)".into(),
                "~290 cycles".into(),
                "80 GB at ~2 TB/s".into(),
                "whole GPU".into(),
            ],
        ],
    )
}

pub(super) fn env_decision_tree(_: &Params) -> String {
    table(
        &["Check, in order", "If it fails, the broken layer is"],
        &[
            vec!["nvidia-smi lists a GPU".into(), "the driver (or the container was started without GPU access)".into()],
            vec!["torch.version.cuda is not None".into(), "the PyTorch wheel: a CPU-only build is installed".into()],
            vec!["torch.cuda.is_available() is True".into(), "driver and wheel disagree (driver too old for the wheel's CUDA), or CUDA_VISIBLE_DEVICES hides the GPU".into()],
            vec!["torch.cuda.device_count() > 0 and get_device_name(0) works".into(), "device visibility for this process".into()],
        ],
    )
}

/// Seconds to move `bytes` over a link of `gbps` gigabytes (1e9 bytes) per second.
pub fn copy_seconds(bytes: f64, gbps: f64) -> f64 {
    bytes / (gbps * 1e9)
}

pub(super) fn transfer_simulator(p: &Params) -> String {
    let gbps = num(p, "bandwidth_gbps", 32.0);
    let tensors = [
        (
            "input batch (32, 3, 224, 224) FP32",
            32.0 * 3.0 * 224.0 * 224.0 * 4.0,
        ),
        ("weight (512, 512) FP32", 512.0 * 512.0 * 4.0),
        ("bias (512,) FP32", 512.0 * 4.0),
    ];
    let rows: Vec<Vec<String>> = tensors
        .iter()
        .map(|(name, bytes)| {
            vec![
                (*name).to_string(),
                format!("{} bytes", thousands(*bytes)),
                format!("{:.2} µs", copy_seconds(*bytes, gbps) * 1e6),
            ]
        })
        .collect();
    para(&format!(
        "Time on the bus at {gbps} GB/s, ignoring per-copy overhead:"
    )) + &table(&["Tensor", "Size", "Copy time"], &rows)
        + &para(
            "An operation between a CPU tensor and a CUDA tensor fails with “Expected all tensors to be on the same device”.",
        )
}

pub(super) fn timeline(p: &Params) -> String {
    let steps = num(p, "steps", 8.0);
    para(&format!(
        "Without a sync point the CPU launches all {} steps in a burst and moves on while the GPU works through its queue. Put a loss.item() in every step and the CPU must wait for each step to finish before launching the next, so the two lanes take turns instead of overlapping.",
        thousands(steps)
    ))
}

pub(super) fn step_stepper(_: &Params) -> String {
    table(
        &["Stage", "CPU", "GPU"],
        &[
            vec![
                "Batch read".into(),
                "builds tensors from dataset rows".into(),
                "idle".into(),
            ],
            vec![
                "Device copy".into(),
                "launches the copy".into(),
                "the batch arrives in device memory".into(),
            ],
            vec![
                "Forward".into(),
                "queues kernels".into(),
                "runs them".into(),
            ],
            vec![
                "Backward".into(),
                "autograd launches kernels".into(),
                "computes gradients".into(),
            ],
            vec![
                "Logging".into(),
                "asks for the loss value".into(),
                "may still be busy: the CPU waits".into(),
            ],
        ],
    )
}

/// Bytes per parameter for weights, gradients and optimizer state.
pub fn bytes_per_param(precision: &str, optimizer: &str) -> (f64, f64, f64) {
    // Autocast mixed precision keeps FP32 parameters, gradients and optimizer state;
    // pure BF16 training stores all three in two-byte values.
    let (w, g, moment) = match precision {
        "bf16" | "fp16" => (2.0, 2.0, 2.0),
        _ => (4.0, 4.0, 4.0),
    };
    let opt = match optimizer {
        "adam" | "adamw" => 2.0 * moment,
        "sgd-momentum" => moment,
        _ => 0.0,
    };
    (w, g, opt)
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

pub(super) fn memory_budget(p: &Params) -> String {
    let params = num(p, "params", 1e9);
    let precision = text(p, "precision", "fp32");
    let optimizer = text(p, "optimizer", "adam");
    let (w, g, o) = bytes_per_param(precision, optimizer);
    let gib = |bytes_per: f64| format!("{:.2} GiB", params * bytes_per / GIB);
    para(&format!(
        "{} parameters, {precision}, {optimizer}: the floor before activations.",
        thousands(params)
    )) + &table(
        &["Term", "Bytes per parameter", "Total"],
        &[
            vec!["Weights".into(), format!("{w}"), gib(w)],
            vec!["Gradients".into(), format!("{g}"), gib(g)],
            vec!["Optimizer state".into(), format!("{o}"), gib(o)],
            vec!["Floor".into(), format!("{}", w + g + o), gib(w + g + o)],
        ],
    ) + &para(
        "Activations come on top and grow with batch × sequence length × hidden size × layers; the interactive calculator adds them and draws the OOM line of the chosen GPU.",
    )
}

pub(super) fn token_positions(p: &Params) -> String {
    let batch = num(p, "batch", 32.0);
    let seq = num(p, "seq", 128.0);
    let base = batch * seq;
    let rows = [
        ("As given", batch, seq),
        ("Half the batch", batch / 2.0, seq),
        ("Half the sequence", batch, seq / 2.0),
    ]
    .iter()
    .map(|(label, b, s)| {
        vec![
            (*label).to_string(),
            format!(
                "{} × {} = {}",
                thousands(*b),
                thousands(*s),
                thousands(b * s)
            ),
            format!("{:.0}%", 100.0 * b * s / base),
            format!("{:.0}%", 100.0 * b * s * s / (base * seq)),
        ]
    })
    .collect::<Vec<_>>();
    table(
        &[
            "Change",
            "Token positions",
            "Activations",
            "Attention scores",
        ],
        &rows,
    )
}

pub(super) fn symptom_triage(_: &Params) -> String {
    table(
        &["Symptom", "Likely cause", "First fix"],
        &[
            vec![
                "Expected all tensors to be on the same device".into(),
                "batch and weights on different devices".into(),
                "move the whole batch".into(),
            ],
            vec![
                "CUDA out of memory after the model loads".into(),
                "activations and optimizer state".into(),
                "smaller batch with accumulation, shorter sequences, mixed precision".into(),
            ],
            vec![
                "Memory full but throughput low".into(),
                "data loading, sync points, small batches, repeated copies".into(),
                "check the input pipeline first: num_workers, pin_memory, prefetch".into(),
            ],
            vec![
                "A kernel that takes no time".into(),
                "the timer stopped before the queued work finished".into(),
                "warm up, synchronise or use CUDA events".into(),
            ],
        ],
    )
}

/// A live experiment's fallback: what it does, and that it needs JavaScript to run.
pub(super) fn live(what: &str) -> String {
    para(what)
        + &para(
            "Press Run (JavaScript needed) to measure it on this server's GPU, or on its CPU when it has none.",
        )
}

pub(super) fn device_card(_: &Params) -> String {
    live(
        "Shows this server's GPU: name, compute capability, SM count, memory, L2 size, clocks, PCIe link, driver and CUDA versions; or the CPU's model, cores and memory when there is no GPU.",
    )
}

pub(super) fn doctor(_: &Params) -> String {
    live(
        "Runs the layered check on the server: does the driver library load, does NVML see devices, can a CUDA context be created, does NVRTC compile a kernel, does cuBLAS load. Each layer passes or shows its error.",
    )
}

pub(super) fn memory_snapshot(_: &Params) -> String {
    live(
        "Reads the server GPU's memory as NVML and the driver see it: used and total, and how much each process holds.",
    )
}

pub(super) fn allocator_playground(_: &Params) -> String {
    live(
        "Allocate and free named tensors in a small, capped pool on the server's GPU and watch three bars: live tensor bytes (allocated), pool bytes (reserved) and what the driver reports. Try empty_cache, then allocate past your cap to see an out-of-memory error.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(toml: &str) -> Params {
        toml::from_str(toml).unwrap()
    }

    #[test]
    fn amdahl_limit_is_twenty_for_p_095() {
        assert!((amdahl_speedup(0.95, 1.0) - 1.0).abs() < 1e-12);
        assert!((amdahl_speedup(0.95, 1e12) - 20.0).abs() < 1e-6);
        assert!(amdahl(&params("p = 0.95")).contains("1 / (1 − p) = 20.0×"));
    }

    #[test]
    fn fp32_adam_floor_for_a_billion_parameters_is_14_90_gib() {
        let (w, g, o) = bytes_per_param("fp32", "adam");
        assert_eq!(w + g + o, 16.0);
        let html = memory_budget(&params("params = 1000000000"));
        assert!(html.contains("14.90 GiB"), "{html}");
        assert_eq!(bytes_per_param("bf16-mixed", "adam"), (4.0, 4.0, 8.0));
        assert_eq!(bytes_per_param("bf16", "sgd"), (2.0, 2.0, 0.0));
    }

    #[test]
    fn race_and_positions_add_up() {
        assert_eq!(rounds(1024.0, 8.0), 128.0);
        assert_eq!(rounds(1000.0, 256.0), 4.0);
        let html = token_positions(&params("batch = 32\nseq = 128"));
        assert!(html.contains("32 × 128 = 4,096"), "{html}");
        assert!(html.contains("<td>50%</td><td>25%</td>"), "{html}");
    }

    #[test]
    fn transfer_sizes_match_the_syllabus() {
        let html = transfer_simulator(&params(""));
        assert!(html.contains("19,267,584 bytes"));
        assert!(html.contains("1,048,576 bytes"));
        assert!(html.contains("2,048 bytes"));
        assert!((copy_seconds(32e9, 32.0) - 1.0).abs() < 1e-12);
    }
}
