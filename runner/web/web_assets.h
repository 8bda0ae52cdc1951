#pragma once
// The page's files, built into deskd from runner/web/assets/ by embed_assets.cmake (a
// generated source): nothing is read from disk or fetched at run time.

#include <span>
#include <string_view>

namespace deskd::web {

struct WebAsset {
  std::string_view name;          ///< its path under assets/: "index.html", "app.js"
  std::string_view content_type;  ///< by its extension
  std::string_view etag;          ///< strong, quoted: "\"<32 hex digits of its SHA-256>\""
  std::span<const unsigned char> plain;
  std::span<const unsigned char> gzip;  ///< gzip -9 of `plain`
};

/// Every asset, in name order.
std::span<const WebAsset> web_assets();
/// The asset called `name`, or nullptr.
const WebAsset* find_web_asset(std::string_view name);

}  // namespace deskd::web
