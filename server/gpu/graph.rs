//! CUDA graphs for the launch-overhead experiment: what a closure queues on a
//! [`Stream`] is recorded once (stream capture) and instantiated as a [`Graph`]; each
//! [`Graph::replay`] then submits the whole recorded sequence with one
//! `cuGraphLaunch`, instead of one launch call per kernel. This is the mechanism
//! behind `torch.cuda.CUDAGraph` and `torch.compile(mode="reduce-overhead")`.
//!
//! Capture uses `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`, so the engine's other worker
//! threads (each with its own handle) are not forbidden any call while one worker
//! records. cudarc's per-allocation event tracking is switched off when the [`Gpu`]
//! opens (see `device.rs`), so no event from outside the capture is waited on inside it.
//! cudarc's graph API is itself safe: no `unsafe` is needed here.
//!
//! [`Gpu`]: super::Gpu

use cudarc::driver::CudaGraph;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};

use super::error::{DriverContext, GpuError};
use super::stream::Stream;

/// A recorded sequence of GPU work, instantiated and ready to replay on the stream it
/// was captured on.
pub struct Graph {
    inner: CudaGraph,
}

impl Graph {
    /// Queues the whole recorded sequence with one launch call (does not wait).
    pub fn replay(&self) -> Result<(), GpuError> {
        self.inner.launch().what("replaying a CUDA graph failed")
    }

    /// Uploads the graph's resources to the device, so the first replay pays no setup.
    pub fn upload(&self) -> Result<(), GpuError> {
        self.inner.upload().what("uploading a CUDA graph failed")
    }
}

impl Stream {
    /// Records what `record` queues on this stream into a [`Graph`] instead of running
    /// it. Inside `record` only queue work on this stream (launches, copies between
    /// existing buffers): allocating or synchronising there is an error the driver
    /// reports, and the capture is always ended so the stream stays usable.
    pub fn capture(
        &self,
        record: impl FnOnce(&Stream) -> Result<(), GpuError>,
    ) -> Result<Graph, GpuError> {
        self.raw()
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .what("starting a stream capture failed")?;
        let recorded = record(self);
        let ended = self
            .raw()
            .end_capture(CUgraphInstantiate_flags(0))
            .what("ending a stream capture failed");
        recorded?;
        match ended? {
            Some(inner) => Ok(Graph { inner }),
            None => Err(GpuError::Unsupported(
                "the stream capture recorded no work, so there is no graph to replay".into(),
            )),
        }
    }
}
