#pragma once
// Session: a desk's conversation with its model — an id, the India day it began, the
// summary it started from, and its transcript (the provider-neutral messages, as JSON).

#include <boost/json/array.hpp>

#include <string>

namespace deskd::desk {

struct Session {
  std::string id;          ///< "s-" + date + random, e.g. s-20261130-3fa2c1
  std::string india_date;  ///< YYYY-MM-DD, the India day it began
  std::string summary;     ///< what the previous session left for this one; may be empty
  boost::json::array transcript;
};

}  // namespace deskd::desk
