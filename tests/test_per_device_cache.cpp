// platform::per_device_cache (the wave size, the selected tile, the shared memory limit and the
// raised kernel attribute are kept in it): queried once a device, failures asked again, one
// successful query under concurrent first calls. A stand-in error type, so no runtime is needed.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "mxi/platform/per_device_cache.hpp"

namespace {

enum class fake_error { ok, failed };

/// A query that counts its calls and answers `value`, or fails while `fail` is set.
struct counted_query {
  std::atomic<int> calls{0};
  int value = 0;
  bool fail = false;
  fake_error operator()(int* out) {
    ++calls;
    *out = fail ? -1 : value;
    return fail ? fake_error::failed : fake_error::ok;
  }
};

}  // namespace

TEST_CASE("per_device_cache asks once a device and keeps each device's value") {
  mxi::platform::per_device_cache<int, 4> cache;
  counted_query q;
  int got = 0;
  q.value = 32;
  CHECK(cache.get(0, &got, [&](int* out) { return q(out); }) == fake_error::ok);
  CHECK(got == 32);
  q.value = 64;  // a later answer for device 0 is not asked for
  got = 0;
  CHECK(cache.get(0, &got, [&](int* out) { return q(out); }) == fake_error::ok);
  CHECK(got == 32);
  CHECK(q.calls == 1);
  CHECK(cache.get(3, &got, [&](int* out) { return q(out); }) == fake_error::ok);
  CHECK(got == 64);
  CHECK(q.calls == 2);
}

TEST_CASE("per_device_cache does not keep a failed query") {
  mxi::platform::per_device_cache<int, 4> cache;
  counted_query q;
  q.fail = true;
  int got = 0;
  CHECK(cache.get(1, &got, [&](int* out) { return q(out); }) == fake_error::failed);
  CHECK(got == -1);  // what the query wrote
  q.fail = false;
  q.value = 7;
  CHECK(cache.get(1, &got, [&](int* out) { return q(out); }) == fake_error::ok);
  CHECK(got == 7);
  CHECK(cache.get(1, &got, [&](int* out) { return q(out); }) == fake_error::ok);
  CHECK(q.calls == 2);
}

TEST_CASE("per_device_cache asks every time for a device outside its range") {
  mxi::platform::per_device_cache<int, 4> cache;
  counted_query q;
  q.value = 5;
  int got = 0;
  for (int device : {-1, 4, 4}) {
    CHECK(cache.get(device, &got, [&](int* out) { return q(out); }) == fake_error::ok);
    CHECK(got == 5);
  }
  CHECK(q.calls == 3);
}

TEST_CASE("per_device_cache runs one query when threads ask together") {
  mxi::platform::per_device_cache<int, 4> cache;
  counted_query q;
  q.value = 9;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      int got = 0;
      const fake_error e = cache.get(2, &got, [&](int* out) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
        return q(out);
      });
      if (e != fake_error::ok || got != 9) ++wrong;
    });
  for (std::thread& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(q.calls == 1);
}
