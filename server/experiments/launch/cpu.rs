//! The CPU stand-in: a worker thread plays the GPU's stream and owns the chain's data
//! (one buffer per way, like the three device buffers). The host hands it work through
//! a channel: one task per step ("eager": what a dispatch to another thread costs on
//! this CPU, paid per step), the whole chain as one batch (the graph's stand-in: one
//! dispatch, the same passes over memory), or one fused loop (each element through all
//! the steps while it sits in a register). Every step is `x = fma(x, 0.999999, 1e-6)`,
//! so all three ways must end at `cpu::busy_from(x, steps)`, bit for bit.
//!
//! This measures thread hand-off, not a GPU launch: the panel and the lesson say so.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Instant;

use super::sweep::{Runner, Sample, Way};
use crate::experiments::ExperimentError;

enum Task {
    /// `steps` separate passes over the buffer, one FMA per element each.
    Passes { buffer: usize, steps: usize },
    /// One pass, `steps` FMAs per element.
    Fused { buffer: usize, steps: usize },
    /// Replace the buffer's contents.
    Load { buffer: usize, data: Vec<f32> },
    /// Send a copy of the buffer back.
    Read {
        buffer: usize,
        reply: Sender<Vec<f32>>,
    },
}

fn stopped() -> ExperimentError {
    ExperimentError::Failed("the worker thread standing in for the GPU stopped".into())
}

/// The worker thread and the channels to it.
pub(super) struct CpuStream {
    tasks: Option<Sender<Task>>,
    done: Receiver<(f64, f64)>,
    worker: Option<JoinHandle<()>>,
    t0: Instant,
}

fn step(x: f32) -> f32 {
    x.mul_add(0.999_999, 1e-6)
}

impl CpuStream {
    /// Starts the worker with three buffers of `elements` zeros; `t0` is the run's clock.
    pub(super) fn start(elements: usize, t0: Instant) -> Self {
        let (tasks, inbox) = channel::<Task>();
        let (finished, done) = channel();
        let worker = std::thread::spawn(move || {
            let mut buffers = vec![vec![0.0f32; elements]; 3];
            let ms = || t0.elapsed().as_secs_f64() * 1e3;
            for task in inbox {
                let start = ms();
                match task {
                    Task::Passes { buffer, steps } => {
                        for _ in 0..steps {
                            for x in buffers[buffer].iter_mut() {
                                *x = step(*x);
                            }
                            std::hint::black_box(&mut buffers[buffer]);
                        }
                    }
                    Task::Fused { buffer, steps } => {
                        for x in buffers[buffer].iter_mut() {
                            *x = crate::cpu::busy_from(*x, steps as u64);
                        }
                    }
                    Task::Load { buffer, data } => {
                        buffers[buffer] = data;
                        continue;
                    }
                    Task::Read { buffer, reply } => {
                        let _ = reply.send(buffers[buffer].clone());
                        continue;
                    }
                }
                if finished.send((start, ms())).is_err() {
                    return;
                }
            }
        });
        Self {
            tasks: Some(tasks),
            done,
            worker: Some(worker),
            t0,
        }
    }

    fn ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1e3
    }

    fn send(&self, task: Task) -> Result<(), ExperimentError> {
        self.tasks
            .as_ref()
            .ok_or_else(stopped)?
            .send(task)
            .map_err(|_| stopped())
    }
}

impl Runner for CpuStream {
    fn load(&mut self, data: &[f32]) -> Result<(), ExperimentError> {
        for way in Way::ALL {
            self.send(Task::Load {
                buffer: way.index(),
                data: data.to_vec(),
            })?;
        }
        Ok(())
    }

    fn read(&mut self, way: Way) -> Result<Vec<f32>, ExperimentError> {
        let (reply, answer) = channel();
        self.send(Task::Read {
            buffer: way.index(),
            reply,
        })?;
        answer.recv().map_err(|_| stopped())
    }

    fn run(&mut self, way: Way, kernels: usize) -> Result<Sample, ExperimentError> {
        let buffer = way.index();
        let tasks: Vec<(String, Task)> = match way {
            Way::Eager => (0..kernels)
                .map(|i| {
                    (
                        format!("hand off step {i}"),
                        Task::Passes { buffer, steps: 1 },
                    )
                })
                .collect(),
            Way::Graph => vec![(
                format!("hand off a batch of {kernels} steps"),
                Task::Passes {
                    buffer,
                    steps: kernels,
                },
            )],
            Way::Fused => vec![(
                format!("hand off one fused loop of {kernels} steps"),
                Task::Fused {
                    buffer,
                    steps: kernels,
                },
            )],
        };
        let mut sample = Sample::default();
        for (label, task) in tasks {
            let start = self.ms();
            self.send(task)?;
            sample.calls.push((label, start, self.ms()));
        }
        let wait = self.ms();
        let count = sample.calls.len();
        for i in 0..count {
            let (start, end) = self.done.recv().map_err(|_| stopped())?;
            let label = match way {
                Way::Eager => format!("step {i}"),
                Way::Graph => format!("batch: {kernels} passes"),
                Way::Fused => format!("fused loop: {kernels} steps"),
            };
            sample.work.push((label, start, end));
        }
        sample.sync = (wait, self.ms());
        Ok(sample)
    }
}

impl Drop for CpuStream {
    fn drop(&mut self) {
        self.tasks = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}
