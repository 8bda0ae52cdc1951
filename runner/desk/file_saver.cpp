#include "runner/desk/file_saver.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

#include "base/atomic_file.h"

namespace deskd::desk {

namespace asio = boost::asio;

namespace {

// One thread for the whole process: saves are rare next to the loop's work, and one thread
// keeps them in order. It lives until exit, when the pool's destructor waits for the saves
// still queued, so none is dropped.
asio::thread_pool& saver() {
  static asio::thread_pool pool(1);
  return pool;
}

}  // namespace

asio::awaitable<Result<void>> save_file_off_loop(std::filesystem::path file, std::string contents, std::string what) {
  // Built in statements of their own, not inside the co_await expression: g++ 12 destroys a
  // temporary lambda's captures twice when the full expression suspends. The job returns an
  // optional because co_spawn's result must be default-constructible.
  auto job = [file = std::move(file), contents = std::move(contents),
              what = std::move(what)]() -> asio::awaitable<std::optional<Result<void>>> {
    co_return write_file_atomically(file, contents, what);
  };
  auto on_saver = asio::co_spawn(saver().get_executor(), std::move(job), asio::use_awaitable);
  std::optional<Result<void>> saved = co_await std::move(on_saver);
  if (!saved) co_return Error::make(ErrorCode::internal, "The saver thread dropped a save.");
  co_return std::move(*saved);
}

}  // namespace deskd::desk
