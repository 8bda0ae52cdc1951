// An API's origins, path patterns (traversal tricks included), body check grammar, body
// summaries and added fields (policy/api_rules.h).

#include <gtest/gtest.h>

#include <string>

#include "policy/api_rules.h"

namespace deskd::policy {
namespace {

std::string origin_error(std::string_view text) {
  auto origin = parse_api_origin(text);
  return origin.ok() ? std::string("(parsed)") : origin.error().what;
}

TEST(ApiOrigin, ParsesSchemeHostAndPort) {
  auto kite = parse_api_origin("https://API.Kite.Trade");
  ASSERT_TRUE(kite.ok());
  EXPECT_EQ(*kite, (ApiOrigin{"https", "api.kite.trade", 443}));
  EXPECT_EQ(kite->text(), "https://api.kite.trade");

  auto local = parse_api_origin("http://127.0.0.1:8080/");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(*local, (ApiOrigin{"http", "127.0.0.1", 8080}));
  EXPECT_EQ(local->text(), "http://127.0.0.1:8080");
  EXPECT_EQ(parse_api_origin("http://example.com")->port, 80);
  EXPECT_EQ(parse_api_origin("https://example.com:8443")->text(), "https://example.com:8443");
}

TEST(ApiOrigin, RefusesWhatIsNotAnOrigin) {
  EXPECT_EQ(origin_error("ftp://x.com"), "'ftp://x.com' is not an API origin: it must start with https:// or http://");
  EXPECT_EQ(origin_error("https://x.com/v1"),
            "'https://x.com/v1' is not an API origin: an origin has no path, query or fragment; write the path in a "
            "rule");
  EXPECT_NE(origin_error("https://x.com?a=1").find("no path, query"), std::string::npos);
  EXPECT_NE(origin_error("https://user:pw@x.com").find("has no user"), std::string::npos);
  EXPECT_NE(origin_error("https://[::1]:443").find("IPv6"), std::string::npos);
  EXPECT_NE(origin_error("https://*.x.com").find("wildcard"), std::string::npos);
  EXPECT_NE(origin_error("https://x.com:0").find("port"), std::string::npos);
  EXPECT_NE(origin_error("https://x.com:99999").find("port"), std::string::npos);
  EXPECT_NE(origin_error("https://x.com:").find("port"), std::string::npos);
  EXPECT_NE(origin_error("https://").find("no host"), std::string::npos);
  EXPECT_NE(origin_error("https://a b.com").find("not a host name"), std::string::npos);
}

TEST(ApiPath, SegmentsStarAndDoubleStar) {
  EXPECT_TRUE(api_path_matches("/quote/**", "/quote"));
  EXPECT_TRUE(api_path_matches("/quote/**", "/quote/ltp"));
  EXPECT_TRUE(api_path_matches("/quote/**", "/quote/a/b/c"));
  EXPECT_FALSE(api_path_matches("/quote/**", "/quotes"));
  EXPECT_TRUE(api_path_matches("/orders/*", "/orders/regular"));
  EXPECT_FALSE(api_path_matches("/orders/*", "/orders"));
  EXPECT_FALSE(api_path_matches("/orders/*", "/orders/"));
  EXPECT_FALSE(api_path_matches("/orders/*", "/orders/a/b"));
  EXPECT_TRUE(api_path_matches("/**", "/"));
  EXPECT_TRUE(api_path_matches("/**", "/anything/at/all"));
  EXPECT_TRUE(api_path_matches("/**/cancel", "/cancel"));
  EXPECT_TRUE(api_path_matches("/**/cancel", "/orders/1/cancel"));
  EXPECT_TRUE(api_path_matches("/a/**/b/**/c", "/a/x/b/y/z/c"));
  EXPECT_FALSE(api_path_matches("/a/**/b/**/c", "/a/x/y/c"));
  EXPECT_FALSE(api_path_matches("/Orders/*", "/orders/1"));  // case matters
  EXPECT_TRUE(api_path_matches("/", "/"));
  EXPECT_FALSE(api_path_matches("/", "/a"));
  EXPECT_TRUE(api_path_matches("/orders/", "/orders/"));
}

TEST(ApiPath, EncodedSegmentsMeetTheRuleWrittenForThem) {
  EXPECT_TRUE(api_path_matches("/admin/**", "/%61dmin/x"));
  EXPECT_TRUE(api_path_matches("/a b", "/a%20b"));
}

TEST(ApiPath, TraversalTricksMatchNothing) {
  for (const char* path :
       {"/quote/../orders/1", "/quote/./x", "/quote//x", "/quote/..", "/quote/.", "/quote/%2e%2e/x", "/quote/%2E./x",
        "/quote/a%2Fb", "/quote/a%2fb", "/quote/a%5Cb", "/quote/a%5cb", "/quote/a\\b", "/quote/..;/orders",
        "/quote/%00", "/quote/a%zz", "/quote/a%2", "quote/x", "", "/quote/\x01"}) {
    EXPECT_FALSE(api_path_matches("/**", path)) << path;
    EXPECT_FALSE(api_path_matches("/quote/**", path)) << path;
  }
}

TEST(ApiPath, PatternsAreChecked) {
  EXPECT_TRUE(check_api_path_pattern("/orders/*").ok());
  EXPECT_TRUE(check_api_path_pattern("/**").ok());
  EXPECT_TRUE(check_api_path_pattern("/").ok());
  EXPECT_TRUE(check_api_path_pattern("/a/**/b").ok());
  EXPECT_EQ(check_api_path_pattern("orders").error().what, "the path pattern 'orders' must start with '/'");
  EXPECT_EQ(check_api_path_pattern("").error().what, "the path pattern '' must start with '/'");
  EXPECT_EQ(check_api_path_pattern("/orders*").error().what,
            "the path pattern '/orders*' has 'orders*': '*' and '**' must be whole segments");
  EXPECT_NE(check_api_path_pattern("/a?b=1").error().what.find("query"), std::string::npos);
  EXPECT_NE(check_api_path_pattern("/a//b").error().what.find("empty"), std::string::npos);
  EXPECT_NE(check_api_path_pattern("/a/../b").error().what.find("'..'"), std::string::npos);
  EXPECT_NE(check_api_path_pattern("/a b").error().what.find("space"), std::string::npos);
}

TEST(BodyCheckGrammar, ParsesEachForm) {
  auto bound = parse_body_check("quantity <= 100");
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->field, std::vector<std::string>{"quantity"});
  EXPECT_TRUE(bound->factor.empty());
  EXPECT_EQ(bound->op, BodyCheck::Op::less_or_equal);
  EXPECT_EQ(bound->value, boost::json::value(100));
  EXPECT_EQ(bound->text, "quantity <= 100");

  auto product = parse_body_check("price*quantity<=200000.5");
  ASSERT_TRUE(product.ok());
  EXPECT_EQ(product->factor, std::vector<std::string>{"quantity"});
  EXPECT_EQ(product->value, boost::json::value(200000.5));

  auto list = parse_body_check(R"(order.exchange in ["NSE", "BSE"])");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->field, (std::vector<std::string>{"order", "exchange"}));
  EXPECT_EQ(list->op, BodyCheck::Op::in);
  EXPECT_EQ(list->value.as_array().size(), 2u);

  EXPECT_EQ(parse_body_check(R"(product == "CNC")")->value, boost::json::value("CNC"));
  EXPECT_EQ(parse_body_check("quantity >= 1")->op, BodyCheck::Op::greater_or_equal);
  EXPECT_EQ(parse_body_check("lot_size-x == 5")->field, std::vector<std::string>{"lot_size-x"});
  EXPECT_TRUE(parse_body_check("quantity in[1,2]").ok());
}

TEST(BodyCheckGrammar, RefusesEachMistakeInASentence) {
  const auto error = [](std::string_view text) { return parse_body_check(text).error().what; };
  EXPECT_EQ(error("<= 5"),
            "the check '<= 5' must start with a field name: letters, digits, '_' or '-', its parts joined by '.'");
  EXPECT_EQ(error("price * <= 5"), "the check 'price * <= 5' needs a field name after '*'");
  EXPECT_EQ(error("quantity < 5"), "the check 'quantity < 5' needs one of <=, >=, == or in after the field");
  EXPECT_EQ(error("quantity <="), "the check 'quantity <=' needs a value after '<='");
  EXPECT_EQ(error("quantity <= ten"),
            "the check 'quantity <= ten' has 'ten' after '<=', which is not a JSON number, a string in double quotes "
            "or an array of them");
  EXPECT_EQ(error("quantity <= \"5\""),
            "the check 'quantity <= \"5\"' compares with '<=', which needs a number, not '\"5\"'");
  EXPECT_EQ(error("quantity >= [1]"),
            "the check 'quantity >= [1]' compares with '>=', which needs a number, not '[1]'");
  EXPECT_EQ(error("product == true"),
            "the check 'product == true' needs a number or a string in double quotes after '==', not 'true'");
  EXPECT_EQ(error("a * b == \"x\""),
            "the check 'a * b == \"x\"' compares a product, which needs a number, not '\"x\"'");
  EXPECT_EQ(error("exchange in []"),
            "the check 'exchange in []' needs a non-empty array such as [\"NSE\", \"BSE\"] after 'in', not '[]'");
  EXPECT_EQ(error("exchange in \"NSE\""),
            "the check 'exchange in \"NSE\"' needs a non-empty array such as [\"NSE\", \"BSE\"] after 'in', not "
            "'\"NSE\"'");
  EXPECT_EQ(error("exchange in [null]"),
            "the check 'exchange in [null]' needs a list of numbers and strings in double quotes after 'in', not "
            "'[null]'");
  EXPECT_EQ(error("a * b in [\"x\"]"),
            "the check 'a * b in [\"x\"]' compares a product, so its list must hold only numbers");
  EXPECT_NE(error("order..qty <= 1").find("must start with a field name"), std::string::npos);
}

TEST(ApiBodySummary, JsonFormAndOther) {
  EXPECT_EQ(summarise_api_body("application/json", R"({"symbol":"INFY","quantity":10,"price":1500.5})"),
            "symbol=\"INFY\", quantity=10, price=1500.5");
  EXPECT_EQ(summarise_api_body("application/json; charset=utf-8", R"({"a":1,"b":{"c":"x","d":[true,null]}})"),
            "a=1, b.c=\"x\", b.d.0=true, b.d.1=null");
  EXPECT_EQ(summarise_api_body("application/x-www-form-urlencoded", "symbol=INFY&quantity=10&note=a+b%21"),
            "symbol=INFY, quantity=10, note=a b!");
  EXPECT_EQ(summarise_api_body("text/plain", "hello"), "5 bytes of text/plain");
  EXPECT_EQ(summarise_api_body("", "hello"), "5 bytes of no content type");
  EXPECT_EQ(summarise_api_body("application/json", "{nope"),
            "5 bytes of application/json (the body is not valid JSON)");
}

TEST(ApiBodySummary, IsCutAndSafeToPrint) {
  const std::string summary = summarise_api_body("application/json", R"({"a":"0123456789012345678901234567890"})", 16);
  EXPECT_LE(summary.size(), 16u);
  EXPECT_TRUE(summary.ends_with("…"));
  EXPECT_EQ(summarise_api_body("application/x-www-form-urlencoded", "note=%1B%5B2J%0Ax"), "note=\\e[2J\\nx");
  EXPECT_EQ(summarise_api_body("text/x\x1b", "b"), "1 bytes of text/x\\e");
}

ApiSpec spec_with_added_fields() {
  ApiSpec spec;
  spec.added_fields.push_back({ApiAddedField::Kind::json, "algo_id", "NSE-ALGO-0042", {"POST"}, "/orders/**"});
  spec.added_fields.push_back({ApiAddedField::Kind::header, "X-Algo-Id", "A1", {}, "/**"});
  spec.added_fields.push_back({ApiAddedField::Kind::form, "tag", "desk 1", {"PUT", "POST"}, "/forms/*"});
  return spec;
}

TEST(ApiAddedFields, ChosenByMethodAndPath) {
  const ApiSpec spec = spec_with_added_fields();
  auto post_order = added_fields_for(spec, "post", "/orders/regular");
  ASSERT_EQ(post_order.size(), 2u);
  EXPECT_EQ(post_order[0]->name, "algo_id");
  EXPECT_EQ(post_order[1]->name, "X-Algo-Id");
  EXPECT_EQ(added_fields_for(spec, "GET", "/orders/regular").size(), 1u);
  EXPECT_EQ(added_fields_for(spec, "PUT", "/forms/a").size(), 2u);
  EXPECT_EQ(added_fields_for(spec, "GET", "/orders/../forms/a").size(), 0u);
}

TEST(ApiAddedFields, SetInJsonAndFormBodies) {
  const ApiSpec spec = spec_with_added_fields();
  const auto json_fields = added_fields_for(spec, "POST", "/orders/regular");
  EXPECT_EQ(*with_added_body_fields("application/json", R"({"qty":1,"algo_id":"mine"})", json_fields),
            R"({"qty":1,"algo_id":"NSE-ALGO-0042"})");
  EXPECT_EQ(*with_added_body_fields("application/json", "", json_fields), R"({"algo_id":"NSE-ALGO-0042"})");
  EXPECT_NE(with_added_body_fields("application/json", "[1]", json_fields).error().what.find("not a JSON object"),
            std::string::npos);
  EXPECT_EQ(with_added_body_fields("text/plain", "x", json_fields).error().what,
            "the API adds the JSON field 'algo_id' to this request, but its body is of type text/plain, not a JSON "
            "object");

  const auto form_fields = added_fields_for(spec, "POST", "/forms/a");
  EXPECT_EQ(*with_added_body_fields("application/x-www-form-urlencoded", "a=%20x&tag=1&b=2&tag=3", form_fields),
            "a=%20x&tag=desk+1&b=2");
  EXPECT_EQ(*with_added_body_fields("application/x-www-form-urlencoded", "", form_fields), "tag=desk+1");
  EXPECT_FALSE(with_added_body_fields("application/json", "{}", form_fields).ok());

  // Header fields are the gate's to add; a body is left as it is.
  std::vector<const ApiAddedField*> header_only{&spec.added_fields[1]};
  EXPECT_EQ(*with_added_body_fields("text/plain", "raw", header_only), "raw");
}

}  // namespace
}  // namespace deskd::policy
