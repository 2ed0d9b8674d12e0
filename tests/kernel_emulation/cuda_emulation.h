// CUDA on the CPU, for tests only: enough of CUDA C++ to compile kernels/*.cu unchanged
// with the host C++ compiler and run a launch the way a GPU would, so the tests can
// compare every kernel with its Rust CPU reference on a machine with no GPU.
//
// The execution model, and why:
// - Every block runs on a fresh OS thread of its own, one block after another. Each
//   CUDA thread of the block is a ucontext coroutine with its own stack on that OS
//   thread, so `__shared__` can be `static thread_local`: one array per block, shared
//   by its threads, never seen by another block.
// - `__syncthreads()` ends a phase: the block runs each of its threads until it reaches
//   the barrier (or returns), then starts the next phase. Threads that exit while
//   others wait, or threads waiting at different barriers, stop the run with a message
//   (on a GPU that is undefined behaviour, usually a hang).
// - Threads (and blocks) run in ascending or, on request, descending order: a kernel
//   whose result depends on the order within a phase has a race.
// - Only what the kernels use is defined; anything else fails to compile, loudly.
//   Arithmetic is the host's IEEE single precision with no FMA contraction (the
//   harness compiles with -ffp-contract=off); the GPU's own rounding (contracted FMAs,
//   its expf) is the GPU selftest's business, not this one's.
#pragma once

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static thread_local
#define __syncthreads() ::cuda_emulation::sync_threads(__LINE__)

struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};

// The built-in variables. Per OS thread, so per block; the scheduler sets threadIdx
// before it resumes each CUDA thread.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace cuda_emulation {

enum class Order { ascending, descending };

// Stops the harness with a message on stderr; the Rust test shows it.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char* format, ...) {
    va_list args;
    va_start(args, format);
    std::fputs("cuda emulation: ", stderr);
    std::vfprintf(stderr, format, args);
    std::fputc('\n', stderr);
    va_end(args);
    std::_Exit(2);
}

// One stack per thread of a block, each above a PROT_NONE page so that an overflow
// crashes instead of corrupting a neighbour. Reused by every block of a launch.
class Stacks {
  public:
    static constexpr size_t bytes = 64 * 1024;

    explicit Stacks(size_t count) : page_(size_t(sysconf(_SC_PAGESIZE))), count_(count) {
        void* region = mmap(nullptr, count * stride(), PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED) fail("cannot map %zu thread stacks", count);
        region_ = static_cast<char*>(region);
        for (size_t i = 0; i < count; ++i) mprotect(region_ + i * stride(), page_, PROT_NONE);
    }
    ~Stacks() { munmap(region_, count_ * stride()); }
    Stacks(const Stacks&) = delete;
    Stacks& operator=(const Stacks&) = delete;

    char* stack(size_t i) const { return region_ + i * stride() + page_; }

  private:
    size_t stride() const { return page_ + bytes; }
    size_t page_, count_;
    char* region_ = nullptr;
};

struct Fiber {
    ucontext_t context;
    bool finished = false;
    int barrier_line = 0;  // the __syncthreads it waits at; 0 while running
};

// The block running on this OS thread.
struct Block {
    ucontext_t scheduler;
    std::vector<Fiber> fibers;
    size_t current = 0;
    const std::function<void()>* kernel = nullptr;
};

inline thread_local Block* running = nullptr;

inline void fiber_main() {
    (*running->kernel)();
    running->fibers[running->current].finished = true;
    // Returning resumes the scheduler (uc_link).
}

__attribute__((noinline)) inline void sync_threads(int line) {
    if (running == nullptr) fail("__syncthreads() outside a kernel");
    Fiber& self = running->fibers[running->current];
    self.barrier_line = line;
    swapcontext(&self.context, &running->scheduler);
}

// The (x, y, z) of the `linear`-th thread of a block, or block of a grid; x varies fastest.
inline uint3 unflatten(size_t linear, dim3 extent) {
    return {unsigned(linear % extent.x), unsigned(linear / extent.x % extent.y),
            unsigned(linear / (size_t(extent.x) * extent.y))};
}

// Runs one block to completion, phase by phase, on the calling OS thread.
inline void run_block(const std::function<void()>& kernel, size_t threads, dim3 block,
                      const Stacks& stacks, Order order) {
    Block b;
    b.kernel = &kernel;
    b.fibers.resize(threads);
    for (size_t t = 0; t < threads; ++t) {
        Fiber& f = b.fibers[t];
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = stacks.stack(t);
        f.context.uc_stack.ss_size = Stacks::bytes;
        f.context.uc_link = &b.scheduler;
        makecontext(&f.context, fiber_main, 0);
    }
    running = &b;
    for (;;) {
        for (size_t k = 0; k < threads; ++k) {
            const size_t t = order == Order::ascending ? k : threads - 1 - k;
            Fiber& f = b.fibers[t];
            if (f.finished) continue;
            f.barrier_line = 0;
            b.current = t;
            threadIdx = unflatten(t, block);
            swapcontext(&b.scheduler, &f.context);
        }
        size_t finished = 0;
        int line = 0;
        for (const Fiber& f : b.fibers) {
            if (f.finished) {
                ++finished;
            } else if (line == 0) {
                line = f.barrier_line;
            } else if (f.barrier_line != line) {
                fail("block (%u,%u,%u): threads wait at different __syncthreads (lines %d and %d)",
                     blockIdx.x, blockIdx.y, blockIdx.z, line, f.barrier_line);
            }
        }
        if (finished == threads) break;
        if (finished > 0) {
            fail("block (%u,%u,%u): %zu threads returned while %zu wait at __syncthreads (line %d)",
                 blockIdx.x, blockIdx.y, blockIdx.z, finished, threads - finished, line);
        }
    }
    running = nullptr;
}

// Launches `kernel` (a call of the kernel with its arguments bound) on `grid` × `block`,
// refusing what CUDA would refuse.
inline void launch(dim3 grid, dim3 block, unsigned shared_bytes, Order order,
                   const std::function<void()>& kernel) {
    const size_t threads = size_t(block.x) * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64)
        fail("invalid block (%u,%u,%u): at most 1024 threads, z at most 64", block.x, block.y, block.z);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535)
        fail("invalid grid (%u,%u,%u)", grid.x, grid.y, grid.z);
    if (shared_bytes != 0) fail("dynamic shared memory (%u bytes) is not emulated", shared_bytes);
    const Stacks stacks(threads);
    const size_t blocks = size_t(grid.x) * grid.y * grid.z;
    for (size_t k = 0; k < blocks; ++k) {
        const size_t index = order == Order::ascending ? k : blocks - 1 - k;
        // A fresh OS thread per block: fresh `__shared__` storage, never another block's.
        std::thread([&] {
            gridDim = grid;
            blockDim = block;
            blockIdx = unflatten(index, grid);
            run_block(kernel, threads, block, stacks, order);
        }).join();
    }
}

}  // namespace cuda_emulation
