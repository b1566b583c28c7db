#include "api/job_secret.hpp"

#include <gtest/gtest.h>

#include <string>

#include "dlcp/error.hpp"
#include "transport/job_key.hpp"

namespace dlcp::api {
namespace {

TEST(JobSecret, ParsesHexOfAcceptedLengths) {
  EXPECT_EQ(parse_job_secret(std::string(32, 'a')), std::vector<std::uint8_t>(16, 0xAA));
  EXPECT_EQ(parse_job_secret(std::string(128, '0')).size(), 64u);
}

TEST(JobSecret, RefusesBadValuesWithoutRepeatingThem) {
  for (const std::string& bad :
       {std::string(30, 'a'), std::string(130, 'a'), std::string(31, 'a') + "g",
        std::string("secret-secret-secret-secret!!")}) {
    try {
      parse_job_secret(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      const std::string what = e.what();
      EXPECT_NE(what.find("DLCP_JOB_SECRET"), std::string::npos) << what;
      EXPECT_EQ(what.find(bad), std::string::npos) << "the message leaks the value: " << what;
    }
  }
}

TEST(JobSecret, TheEnvironmentWinsAndStaysOutOfTheStore) {
  HashStore store;
  const std::string hex(64, 'c');
  EXPECT_EQ(agree_job_secret(store, "job_secret", 0, hex.c_str()),
            std::vector<std::uint8_t>(32, 0xCC));
  EXPECT_FALSE(store.check({"job_secret"}));
}

TEST(JobSecret, RankZeroSharesAFreshSecretThroughTheStore) {
  HashStore store;
  const auto first = agree_job_secret(store, "a/job_secret", 0, nullptr);
  EXPECT_EQ(first.size(), transport::kKeyBytes);
  EXPECT_EQ(agree_job_secret(store, "a/job_secret", 3, ""), first);
  // Another job (prefix) gets another secret.
  EXPECT_NE(agree_job_secret(store, "b/job_secret", 0, nullptr), first);
}

TEST(JobSecret, AMalformedStoredSecretIsAProtocolError) {
  HashStore store;
  store.set("job_secret", "not hex");
  try {
    agree_job_secret(store, "job_secret", 1, nullptr);
    ADD_FAILURE() << "accepted a malformed stored secret";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kProtocol);
  }
}

}  // namespace
}  // namespace dlcp::api
