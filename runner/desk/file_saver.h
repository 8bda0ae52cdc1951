#pragma once
// Saving a desk's small state files (the session after a turn, the day's usage after each
// model call) without stalling the event loop. Each save is write_file_atomically — two
// fsyncs, milliseconds on a real disk — and on the loop it held up every other desk and
// every acknowledgement for that long. Here the write runs on one thread of its own while
// the saving coroutine waits for it: a turn still does not go on until its save is on disk,
// but the loop serves everyone else meanwhile.

#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <string>

#include "base/result.h"

namespace deskd::desk {

/// write_file_atomically(file, contents, what) on the saver thread, resuming the caller on
/// its own executor when the file is on disk. Saves run one at a time in the order they were
/// asked for, so two saves of one file leave the later contents. A coroutine that must save
/// while it is being cancelled (a stopped turn keeps what it did) turns off
/// asio::this_coro::throw_if_cancelled around the wait: asio checks at every co_await.
boost::asio::awaitable<Result<void>> save_file_off_loop(std::filesystem::path file, std::string contents,
                                                        std::string what);

}  // namespace deskd::desk
