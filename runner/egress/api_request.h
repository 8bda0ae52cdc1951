#pragma once
// What the API gate does to one request and says about it, with no I/O: the digest of the
// request as the desk sent it, the request as the API gets it (fixed fields added, the
// credentials in, hop-by-hop fields out), and the JSON bodies of its refusals. Private to
// runner/egress/.

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/api_rules.h"
#include "runner/egress/api_gate.h"

namespace deskd::egress {

using ApiHttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using ApiHttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

/// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

/// The request as the desk sent it (request line, fields in order, body), for its digest.
std::string request_bytes(const ApiHttpRequest& request);

/// The path of an origin-form target, without its query.
std::string_view path_of(std::string_view target);

/// Whether the Host field names `origin` ("host" or "host:port", case-blind).
bool host_matches(std::string_view host_field, const policy::ApiOrigin& origin);

/// `request` made ready for `api`'s server: fixed fields added, each credential of `api`
/// applied (its placeholder replaced where the desk wrote it, in the target and the fields,
/// and in the body where in_body says; else put where its placement says), the
/// hop-by-hop fields removed and Host set to `origin`. An error sentence when a body field
/// cannot be added.
Result<ApiHttpRequest> prepare_upstream_request(ApiHttpRequest request, const GatedApi& api,
                                                const policy::ApiOrigin& origin, bool upgrade);

/// A response to the desk from the gate itself: `status`, a JSON body {"error", "api",
/// "rule", "why"}, kept alive when `keep_alive`.
ApiHttpResponse gate_response(unsigned status, std::string_view error, std::string_view api, std::string_view rule,
                              std::string_view why, bool keep_alive);

/// `response` from upstream as the desk gets it: hop-by-hop fields removed, the body's
/// length set, kept alive as the desk asked.
void prepare_downstream_response(ApiHttpResponse& response, bool keep_alive);

}  // namespace deskd::egress
