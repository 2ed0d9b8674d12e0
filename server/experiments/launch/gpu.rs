//! The GPU path: the chain's step is `busy_f32` with one iteration (each element
//! `x = fma(x, 0.999999, 1e-6)`, a tiny element-wise kernel), so a chain of N steps is N
//! launches of it ("eager"), the same N launches captured once as a CUDA graph and
//! replayed with one call ("graph"), or one `busy_f32` launch with N iterations
//! ("fused": the element stays in a register between steps). Each way has its own
//! device buffer. Host spans come from the host clock around each call; the device
//! span of a chain from two CUDA events around it, read against a first event that is
//! recorded and waited for before the run's host clock starts (as in the timing
//! experiment), so both lanes share one time axis.

use std::collections::HashMap;
use std::time::Instant;

use super::sweep::{Runner, Sample, Way};
use crate::experiments::ExperimentError;
use crate::gpu::{DeviceBuffer, Gpu, GpuError, Graph, Kernels, Marks, Stream};

/// The chain on the device.
pub(super) struct GpuChain {
    kernels: std::sync::Arc<Kernels>,
    stream: Stream,
    buffers: Vec<DeviceBuffer<f32>>,
    blocks: u32,
    graphs: HashMap<usize, Graph>,
    marks: Marks,
    t0: Instant,
}

impl GpuChain {
    /// Three device buffers of `elements` zeros; the first mark is recorded and waited
    /// for, then the run's host clock starts.
    pub(super) fn open(gpu: &mut Gpu, elements: usize) -> Result<Self, ExperimentError> {
        let stream = gpu.stream().clone();
        let buffers = (0..3)
            .map(|_| stream.zeros::<f32>(elements))
            .collect::<Result<Vec<_>, GpuError>>()?;
        let blocks = u32::try_from(elements.div_ceil(256).clamp(1, 65_535)).unwrap_or(65_535);
        let mut marks = gpu.marks();
        marks.record(&stream)?;
        stream.sync()?;
        Ok(Self {
            kernels: gpu.kernels(),
            stream,
            buffers,
            blocks,
            graphs: HashMap::new(),
            marks,
            t0: Instant::now(),
        })
    }

    /// Run start → now, ms.
    pub(super) fn now_ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1e3
    }

    /// The graph of `kernels` one-step launches on the graph buffer, captured on first
    /// use and uploaded, so no replay pays the setup.
    fn graph(&mut self, kernels: usize) -> Result<&Graph, ExperimentError> {
        if !self.graphs.contains_key(&kernels) {
            let (chain, blocks) = (self.kernels.clone(), self.blocks);
            let buffer = &mut self.buffers[Way::Graph.index()];
            let graph = self.stream.capture(|stream| {
                for _ in 0..kernels {
                    chain.busy(stream, buffer, 1, blocks)?;
                }
                Ok(())
            })?;
            graph.upload()?;
            self.stream.sync()?;
            self.graphs.insert(kernels, graph);
        }
        self.graphs
            .get(&kernels)
            .ok_or_else(|| ExperimentError::Failed("the captured graph went missing".into()))
    }
}

impl Runner for GpuChain {
    fn load(&mut self, data: &[f32]) -> Result<(), ExperimentError> {
        for buffer in &mut self.buffers {
            self.stream.copy_to_device(data, buffer)?;
        }
        self.stream.sync()?;
        Ok(())
    }

    fn read(&mut self, way: Way) -> Result<Vec<f32>, ExperimentError> {
        Ok(self.stream.download(&self.buffers[way.index()])?)
    }

    fn run(&mut self, way: Way, kernels: usize) -> Result<Sample, ExperimentError> {
        if way == Way::Graph {
            self.graph(kernels)?;
        }
        let mut sample = Sample::default();
        let first = self.marks.record(&self.stream)?;
        match way {
            Way::Eager => {
                let buffer = &mut self.buffers[Way::Eager.index()];
                for i in 0..kernels {
                    let start = self.t0.elapsed().as_secs_f64() * 1e3;
                    self.kernels.busy(&self.stream, buffer, 1, self.blocks)?;
                    let end = self.t0.elapsed().as_secs_f64() * 1e3;
                    sample.calls.push((format!("launch {i}"), start, end));
                }
            }
            Way::Graph => {
                let start = self.now_ms();
                self.graphs
                    .get(&kernels)
                    .ok_or_else(|| ExperimentError::Failed("no captured graph".into()))?
                    .replay()?;
                sample.calls.push((
                    format!("graph launch ({kernels} kernels)"),
                    start,
                    self.now_ms(),
                ));
            }
            Way::Fused => {
                let start = self.now_ms();
                let buffer = &mut self.buffers[Way::Fused.index()];
                let steps = u32::try_from(kernels).unwrap_or(u32::MAX);
                self.kernels
                    .busy(&self.stream, buffer, steps, self.blocks)?;
                sample.calls.push((
                    format!("launch fused kernel ({kernels} steps)"),
                    start,
                    self.now_ms(),
                ));
            }
        }
        let last = self.marks.record(&self.stream)?;
        let wait = self.now_ms();
        self.stream.sync()?;
        sample.sync = (wait, self.now_ms());
        let label = match way {
            Way::Eager => format!("{kernels} kernels, one launch each"),
            Way::Graph => format!("graph replay: {kernels} kernels"),
            Way::Fused => format!("fused kernel: {kernels} steps"),
        };
        sample.work.push((
            label,
            self.marks.offset_ms(first)?,
            self.marks.offset_ms(last)?,
        ));
        Ok(sample)
    }
}
