// The README's example on the GPU backend: the same toy batch with every buffer in device memory,
// the workspace the call asks for, and the error word in device memory too. Exits 4 (a visible
// skip) where no GPU backend was built or no GPU is present.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mxi/mxi.hpp"
#include "mxi/platform/runtime.hpp"  // cudaMalloc / hipMalloc and friends under one name
#include "toy_batch.hpp"

namespace {

/// Device allocations freed together at the end; an engine has its own allocator.
class device_memory {
 public:
  ~device_memory() {
    for (void* p : owned_) (void)mxi::platform::free(p);
  }
  template <class T>
  T* alloc(size_t count) {
    void* p = nullptr;
    check(mxi::platform::malloc(&p, count * sizeof(T)), "malloc");
    owned_.push_back(p);
    check(mxi::platform::memset(p, 0, count * sizeof(T)), "memset");
    return static_cast<T*>(p);
  }
  template <class T>
  T* copy(const std::vector<T>& host) {
    T* d = alloc<T>(host.size());
    check(mxi::platform::memcpy(d, host.data(), host.size() * sizeof(T),
                                mxi::platform::copy_kind::host_to_device),
          "memcpy");
    return d;
  }
  template <class T>
  static std::vector<T> download(const T* d, size_t count) {
    std::vector<T> host(count);
    check(mxi::platform::memcpy(host.data(), d, count * sizeof(T),
                                mxi::platform::copy_kind::device_to_host),
          "memcpy");
    return host;
  }
  static void check(mxi::platform::error_t e, const char* what) {
    if (e == mxi::platform::success) return;
    std::fprintf(stderr, "%s: %s\n", what, mxi::platform::error_string(e));
    std::exit(1);
  }

 private:
  std::vector<void*> owned_;
};

bool report(const mxi::status& s) {
  if (!s) std::fprintf(stderr, "%s\n", s.message().c_str());
  return s.ok();
}

}  // namespace

int main() {
  if (!mxi::backend_available(mxi::backend::gpu)) {
    std::printf("SKIPPED: no GPU backend in this build, or no GPU present\n");
    return 4;
  }
  const toy::batch b = toy::make_batch();
  device_memory gpu;
  const int64_t num_tokens = b.num_tokens;
  uint32_t* error_word = gpu.alloc<uint32_t>(1);  // zeroed; every call below ORs its bits in
  mxi::execution exec;
  exec.where = mxi::backend::gpu;  // device pointers, stream-ordered (the default stream here)
  exec.error_word = error_word;

  uint8_t* kv_cache = gpu.alloc<uint8_t>(toy::num_pages * toy::page_stride);  // 256-byte aligned
  mxi::k_cache_write_args write;
  write.k = gpu.copy(b.keys);
  write.num_tokens = static_cast<int64_t>(b.slot_mapping.size());
  write.slot_mapping = gpu.copy(b.slot_mapping);
  write.cache = {kv_cache, toy::num_pages, toy::page_stride, toy::block_size, toy::head_dim,
                 mxi::cache_layout::linear};
  if (!report(mxi::write_k_cache(write, exec))) return 1;

  int32_t* topk = gpu.alloc<int32_t>(num_tokens * toy::k);
  mxi::indexer_args args;
  args.queries.q = gpu.copy(b.queries);  // fp32, quantized inside the call's first kernel
  args.queries.weights = gpu.copy(b.weights);
  args.queries.num_tokens = num_tokens;
  args.queries.num_heads = toy::heads;
  args.queries.head_dim = toy::head_dim;
  args.cache = {kv_cache, toy::num_pages, toy::page_stride, toy::block_size, toy::head_dim,
                mxi::cache_layout::linear};
  args.requests = {gpu.copy(b.query_start_loc), gpu.copy(b.seq_lens), gpu.copy(b.block_table),
                   b.num_requests, b.block_table_stride};
  args.max_model_len = toy::max_model_len;
  args.topk = {topk, toy::k, toy::k};

  // The GPU backend allocates nothing: the caller hands it a workspace of the size it asks for
  // (with float queries, room for their quantized copy too).
  size_t bytes = 0;
  if (!report(mxi::workspace_bytes(args, mxi::backend::gpu, bytes))) return 1;
  exec.workspace = gpu.alloc<unsigned char>(bytes);
  exec.workspace_bytes = bytes;
  if (!report(mxi::run_indexer(args, exec))) return 1;

  // Nothing is synchronised for the caller: the copies back wait for the default stream.
  const uint32_t errors = device_memory::download(error_word, 1)[0];
  if (errors != 0) {  // the rows concerned are all -1, yet every call returned ok
    std::fprintf(stderr, "%s\n", mxi::describe_device_errors(errors).c_str());
    return 1;
  }
  toy::print_rows(device_memory::download(topk, num_tokens * toy::k));
  return 0;
}
