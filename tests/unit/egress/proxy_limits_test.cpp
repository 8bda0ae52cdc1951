// What bounds a desk's egress proxy besides its sockets: the byte budget every relayed
// byte is charged to, and the rate limit on refusal reports (a desk looping on a refused
// host must not flood the journal).

#include <gtest/gtest.h>

#include "runner/egress/proxy_shared.h"

namespace deskd::egress {
namespace {

TEST(ProxyLimitsTest, TheByteBudgetIsSpentExactlyOnce) {
  ProxyShared shared;
  shared.settings.limits.bytes = 1000;
  EXPECT_TRUE(shared.charge(600));
  EXPECT_TRUE(shared.charge(400));
  EXPECT_FALSE(shared.charge(1));
  EXPECT_FALSE(shared.charge(0)) << "a budget once overdrawn stays spent";
}

TEST(ProxyLimitsTest, AtMostSixtyRefusalsAMinuteReachTheSink) {
  ProxyShared shared;
  std::vector<EgressRefusal> reported;
  shared.sink = [&](const EgressRefusal& refusal) { reported.push_back(refusal); };
  for (int index = 0; index < 500; ++index) shared.report("blocked.example", 443, "not in allowed_hosts");
  ASSERT_EQ(reported.size(), kRefusalReportsPerMinute);
  EXPECT_EQ(reported.front().host, "blocked.example");
  EXPECT_EQ(reported.front().port, 443);
  EXPECT_EQ(reported.back().unreported_before, 0u);
}

}  // namespace
}  // namespace deskd::egress
