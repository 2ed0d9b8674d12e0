// The kernel-emulation harness (tests only): every file in kernels/ compiled by the host
// C++ compiler against cuda_emulation.h, and a main() that runs one launch per process.
// tests/kernel_emulation/emulator.rs builds it and speaks its protocol:
//
//   `harness --list`  prints every kernel it can launch, one per line.
//   `harness` reads a request on stdin (little-endian):
//       name: u32 length + bytes; grid: 3 × u32; block: 3 × u32; shared bytes: u32;
//       order: u8 ('a' ascending, 'd' descending); argument count: u32; then per
//       argument a tag and its value: 'u' u64, 'w' u32, 'i' i32, 'f' f32 (each sent as
//       8 bytes), or 'F' f32, 'I' i32, 'B' bf16, 'H' f16 buffers (u64 count + data);
//     launches the kernel, and writes every buffer argument back to stdout, in order,
//     as its tag, u64 count and data.
//
// Each argument's tag is checked against the kernel's own parameter type, so a request
// that does not match the kernel's signature stops with a message instead of running.
// Buffers end exactly at a PROT_NONE page: an access past the end crashes the harness.
#include "cuda_emulation.h"

// The kernels, exactly as NVRTC compiles them (common.cuh is included once).
#include "busy.cu"
#include "elementwise.cu"
#include "loss.cu"
#include "optim.cu"
#include "reduce.cu"

#include <cstdint>
#include <cstring>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the protocol's buffers are little-endian");

// Not a course kernel: checks the emulation's own __half against the `half` crate.
extern "C" __global__ void emulation_f16_round_trip(const float* x, float* y, unsigned long long n) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        y[i] = __half2float(__float2half(x[i]));
    }
}

namespace {

using cuda_emulation::fail;

template <class T> constexpr char scalar_tag = 0;
template <> constexpr char scalar_tag<unsigned long long> = 'u';
template <> constexpr char scalar_tag<unsigned int> = 'w';
template <> constexpr char scalar_tag<int> = 'i';
template <> constexpr char scalar_tag<float> = 'f';

template <class T> constexpr char buffer_tag = 0;
template <> constexpr char buffer_tag<float> = 'F';
template <> constexpr char buffer_tag<int> = 'I';
template <> constexpr char buffer_tag<__nv_bfloat16> = 'B';
template <> constexpr char buffer_tag<__half> = 'H';

size_t element_size(char tag) {
    switch (tag) {
        case 'F': case 'I': return 4;
        case 'B': case 'H': return 2;
        default: return 0;
    }
}

// A buffer whose last byte sits just below a PROT_NONE page.
class GuardedBuffer {
  public:
    explicit GuardedBuffer(size_t bytes) : bytes_(bytes) {
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        const size_t data_pages = (bytes + page - 1) / page;
        region_bytes_ = (data_pages + 1) * page;
        void* region = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED) fail("cannot map a %zu-byte buffer", bytes);
        region_ = static_cast<char*>(region);
        mprotect(region_ + data_pages * page, page, PROT_NONE);
        data_ = region_ + data_pages * page - bytes;
    }
    ~GuardedBuffer() { munmap(region_, region_bytes_); }
    GuardedBuffer(const GuardedBuffer&) = delete;
    GuardedBuffer& operator=(const GuardedBuffer&) = delete;

    char* data() const { return data_; }
    size_t bytes() const { return bytes_; }

  private:
    size_t bytes_, region_bytes_;
    char* region_;
    char* data_;
};

struct Argument {
    char tag = 0;
    uint64_t scalar = 0;
    size_t count = 0;
    std::unique_ptr<GuardedBuffer> buffer;
};

struct Request {
    std::string kernel;
    dim3 grid, block;
    unsigned shared_bytes = 0;
    cuda_emulation::Order order = cuda_emulation::Order::ascending;
    std::vector<Argument> arguments;
};

class Reader {
  public:
    explicit Reader(const std::string& bytes) : bytes_(bytes) {}
    template <class T> T take() {
        T value;
        read(&value, sizeof value);
        return value;
    }
    void read(void* out, size_t n) {
        if (n > bytes_.size() - at_) fail("the request ends early");
        std::memcpy(out, bytes_.data() + at_, n);
        at_ += n;
    }
    bool done() const { return at_ == bytes_.size(); }

  private:
    const std::string& bytes_;
    size_t at_ = 0;
};

Request parse(const std::string& bytes) {
    Reader in(bytes);
    Request r;
    r.kernel.resize(in.take<uint32_t>());
    in.read(r.kernel.data(), r.kernel.size());
    r.grid = {in.take<uint32_t>(), in.take<uint32_t>(), in.take<uint32_t>()};
    r.block = {in.take<uint32_t>(), in.take<uint32_t>(), in.take<uint32_t>()};
    r.shared_bytes = in.take<uint32_t>();
    const char order = in.take<char>();
    if (order != 'a' && order != 'd') fail("order must be 'a' or 'd', not '%c'", order);
    r.order = order == 'a' ? cuda_emulation::Order::ascending : cuda_emulation::Order::descending;
    r.arguments.resize(in.take<uint32_t>());
    for (Argument& a : r.arguments) {
        a.tag = in.take<char>();
        if (element_size(a.tag) == 0) {
            a.scalar = in.take<uint64_t>();
            continue;
        }
        a.count = size_t(in.take<uint64_t>());
        a.buffer = std::make_unique<GuardedBuffer>(a.count * element_size(a.tag));
        in.read(a.buffer->data(), a.buffer->bytes());
    }
    if (!in.done()) fail("%s: bytes left over after the arguments", r.kernel.c_str());
    return r;
}

// The value of argument `index` as the kernel's parameter type P.
template <class P> P bind(const Request& r, size_t index) {
    const Argument& a = r.arguments[index];
    if constexpr (std::is_pointer_v<P>) {
        using Element = std::remove_const_t<std::remove_pointer_t<P>>;
        static_assert(buffer_tag<Element> != 0, "a kernel parameter points to a type the harness has no tag for");
        if (a.tag != buffer_tag<Element>)
            fail("%s: argument %zu is a '%c' buffer, got '%c'", r.kernel.c_str(), index, buffer_tag<Element>, a.tag);
        return reinterpret_cast<P>(a.buffer->data());
    } else {
        static_assert(scalar_tag<P> != 0, "a kernel parameter has a type the harness has no tag for");
        if (a.tag != scalar_tag<P>)
            fail("%s: argument %zu is a '%c' scalar, got '%c'", r.kernel.c_str(), index, scalar_tag<P>, a.tag);
        P value;
        if constexpr (sizeof(P) == 8) {
            std::memcpy(&value, &a.scalar, 8);
        } else {
            const uint32_t low = uint32_t(a.scalar);
            std::memcpy(&value, &low, 4);
        }
        return value;
    }
}

template <class... P, size_t... I>
void launch(void (*kernel)(P...), const Request& r, std::index_sequence<I...>) {
    const std::tuple<P...> values{bind<P>(r, I)...};
    cuda_emulation::launch(r.grid, r.block, r.shared_bytes, r.order, [&] { std::apply(kernel, values); });
}

template <class... P> void launch(void (*kernel)(P...), const Request& r) {
    if (r.arguments.size() != sizeof...(P))
        fail("%s takes %zu arguments, got %zu", r.kernel.c_str(), sizeof...(P), r.arguments.size());
    launch(kernel, r, std::index_sequence_for<P...>{});
}

#define KERNEL(name) {#name, [](const Request& r) { launch(name, r); }}
const std::map<std::string, void (*)(const Request&)> kernels = {
    KERNEL(busy_f32),
    KERNEL(fill_f32),
    KERNEL(add_bias_f32),
    KERNEL(relu_f32),
    KERNEL(relu_bf16),
    KERNEL(relu_backward_f32),
    KERNEL(f32_to_bf16),
    KERNEL(round_bf16_f32),
    KERNEL(softmax_xent_f32),
    KERNEL(sgd_f32),
    KERNEL(adam_f32),
    KERNEL(column_sums_f32),
    KERNEL(column_partial_sums_f32),
    KERNEL(bias_relu_f32),
    KERNEL(bias_relu_bf16),
    KERNEL(relu_backward_partials_f32),
    KERNEL(relu_backward_partials_bf16),
    KERNEL(scaled_sum_f32),
    KERNEL(emulation_f16_round_trip),
};

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (const auto& entry : kernels) std::cout << entry.first << '\n';
        return 0;
    }
    const std::string bytes{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    const Request r = parse(bytes);
    const auto kernel = kernels.find(r.kernel);
    if (kernel == kernels.end()) fail("no kernel named %s", r.kernel.c_str());
    kernel->second(r);
    for (const Argument& a : r.arguments) {
        if (!a.buffer) continue;
        const uint64_t count = a.count;
        std::cout.put(a.tag);
        std::cout.write(reinterpret_cast<const char*>(&count), sizeof count);
        std::cout.write(a.buffer->data(), std::streamsize(a.buffer->bytes()));
    }
    std::cout.flush();
    return std::cout ? 0 : 1;
}
