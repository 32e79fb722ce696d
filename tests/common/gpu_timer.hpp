// GPU time of a region of the default stream, from a pair of events: what the benchmarks and the
// tools report (host clocks would add launch overhead and miss asynchronous work).
#pragma once

#include "device_buffer.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::testing {

class gpu_timer {
 public:
  gpu_timer() {
    gpu_check(platform::event_create(&start_), "event create");
    gpu_check(platform::event_create(&stop_), "event create");
  }
  ~gpu_timer() {
    // A destructor has no one to report a failure to.
    (void)platform::event_destroy(start_);
    (void)platform::event_destroy(stop_);
  }
  gpu_timer(const gpu_timer&) = delete;
  gpu_timer& operator=(const gpu_timer&) = delete;

  /// Seconds the GPU spent on what `work` enqueues on the default stream.
  template <class Work>
  double time(Work&& work) {
    gpu_check(platform::event_record(start_, nullptr), "event record");
    work();
    gpu_check(platform::event_record(stop_, nullptr), "event record");
    gpu_check(platform::event_synchronize(stop_), "event synchronize");
    float ms = 0;
    gpu_check(platform::event_elapsed_ms(&ms, start_, stop_), "event elapsed");
    return 1e-3 * ms;
  }

 private:
  platform::event_t start_{}, stop_{};
};

}  // namespace mxi::testing
