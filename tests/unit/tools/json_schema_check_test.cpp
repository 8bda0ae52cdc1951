// schema_violation(): the JSON Schema keywords the desk tools declare, each refused with a
// sentence naming the argument at fault; unknown keywords restrict nothing.

#include "runner/tools/json_schema_check.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace deskd::tools::testing {
namespace {

namespace json = boost::json;

std::optional<std::string> check(std::string_view schema, std::string_view instance) {
  return schema_violation(json::parse(schema), json::parse(instance));
}

// bash's own schema (runner/tools/bash_tools.cpp).
constexpr std::string_view kCommand =
    R"({"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false})";

TEST(JsonSchemaCheckTest, AConformingInstancePasses) {
  EXPECT_EQ(check(kCommand, R"({"command":"ls"})"), std::nullopt);
  EXPECT_EQ(check(R"({"type":"object"})", R"({"anything":[1,{"a":null}]})"), std::nullopt);
  EXPECT_EQ(check(R"({"type":"object","x-unknown":{"type":"string"}})", "{}"), std::nullopt);
}

TEST(JsonSchemaCheckTest, EachProblemNamesTheField) {
  EXPECT_EQ(check(kCommand, "{}"), "'command' is required.");
  EXPECT_EQ(check(kCommand, R"({"command":5})"), "'command' must be a string.");
  EXPECT_EQ(check(kCommand, R"({"command":"ls","cwd":"/"})"),
            "'cwd' is not an argument of this tool; it takes 'command'.");
  EXPECT_EQ(check(R"({"type":"object","properties":{},"additionalProperties":false})", R"({"x":1})"),
            "'x' is not an argument of this tool, which takes none.");
  EXPECT_EQ(check(kCommand, "[]"), "the arguments must be an object.");
}

TEST(JsonSchemaCheckTest, TypesAndWholeNumbers) {
  const std::string_view schema = R"({"type":"object","properties":{"n":{"type":"integer"},"b":{"type":"boolean"},
    "either":{"type":["string","null"]}}})";
  EXPECT_EQ(check(schema, R"({"n":3,"b":true,"either":null})"), std::nullopt);
  EXPECT_EQ(check(schema, R"({"n":3.0})"), std::nullopt) << "3.0 is a whole number";
  EXPECT_EQ(check(schema, R"({"n":3.5})"), "'n' must be a whole number.");
  EXPECT_EQ(check(schema, R"({"n":"3"})"), "'n' must be a whole number.");
  EXPECT_EQ(check(schema, R"({"b":0})"), "'b' must be a boolean.");
  EXPECT_EQ(check(schema, R"({"either":1})"), "'either' must be a string or null.");
}

TEST(JsonSchemaCheckTest, EnumsConstantsAndBounds) {
  const std::string_view schema = R"({"type":"object","properties":{
    "mode":{"enum":["fast","slow"]}, "kind":{"const":"x"},
    "offset":{"type":"integer","minimum":1,"maximum":10}, "ratio":{"exclusiveMinimum":0,"exclusiveMaximum":1},
    "name":{"type":"string","minLength":2,"maxLength":3}, "list":{"type":"array","minItems":1,"maxItems":2,
    "items":{"type":"integer"}}}})";
  EXPECT_EQ(check(schema, R"({"mode":"fast","kind":"x","offset":1,"ratio":0.5,"name":"ab","list":[1]})"), std::nullopt);
  EXPECT_EQ(check(schema, R"({"mode":"medium"})"), R"('mode' must be one of "fast", "slow".)");
  EXPECT_EQ(check(schema, R"({"kind":"y"})"), R"('kind' must be "x".)");
  EXPECT_EQ(check(schema, R"({"offset":0})"), "'offset' must be at least 1.");
  EXPECT_EQ(check(schema, R"({"offset":11})"), "'offset' must be at most 10.");
  EXPECT_EQ(check(schema, R"({"ratio":0})"), "'ratio' must be more than 0.");
  EXPECT_EQ(check(schema, R"({"ratio":1})"), "'ratio' must be less than 1.");
  EXPECT_EQ(check(schema, R"({"name":"a"})"), "'name' must be at least 2 characters long.");
  EXPECT_EQ(check(schema, "{\"name\":\"\xC3\xA9\xC3\xA9\xC3\xA9\"}"), std::nullopt) << "characters, not bytes";
  EXPECT_EQ(check(schema, R"({"name":"abcd"})"), "'name' must be at most 3 characters long.");
  EXPECT_EQ(check(schema, R"({"list":[]})"), "'list' must have at least 1 items.");
  EXPECT_EQ(check(schema, R"({"list":[1,2,3]})"), "'list' must have at most 2 items.");
  EXPECT_EQ(check(schema, R"({"list":[1,"2"]})"), "'list'[1] must be a whole number.");
}

TEST(JsonSchemaCheckTest, NestedObjectsNameThePath) {
  const std::string_view schema = R"({"type":"object","properties":{"outer":{"type":"object",
    "properties":{"inner":{"type":"string"}},"required":["inner"],"additionalProperties":{"type":"number"}}}})";
  EXPECT_EQ(check(schema, R"({"outer":{}})"), "'outer'.inner is required.");
  EXPECT_EQ(check(schema, R"({"outer":{"inner":1}})"), "'outer'.inner must be a string.");
  EXPECT_EQ(check(schema, R"({"outer":{"inner":"a","extra":"b"}})"), "'outer'.extra must be a number.");
}

}  // namespace
}  // namespace deskd::tools::testing
