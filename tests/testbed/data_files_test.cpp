#include "workload/data_files.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace dlcp::workload {
namespace {

namespace fs = std::filesystem;

class DataFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dlcp-data-files-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(DataFiles, InstalledProgramFindsShareBesideBin) {
  fs::create_directories(root_ / "prefix/bin");
  fs::create_directories(root_ / "prefix/share/dlcp/models");
  const auto found = find_data_dir(root_ / "prefix/bin");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, root_ / "prefix/share/dlcp");
}

TEST_F(DataFiles, ProgramDeepInABuildTreeFindsTheBuildTreesCopy) {
  fs::create_directories(root_ / "build/tests/testbed");
  fs::create_directories(root_ / "build/share/dlcp");
  const auto found = find_data_dir(root_ / "build/tests/testbed");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, root_ / "build/share/dlcp");
}

TEST_F(DataFiles, NearestDirectoryWins) {
  fs::create_directories(root_ / "a/b/share/dlcp");
  fs::create_directories(root_ / "a/share/dlcp");
  EXPECT_EQ(find_data_dir(root_ / "a/b"), root_ / "a/b/share/dlcp");
}

TEST_F(DataFiles, SearchStopsAfterMaxLevels) {
  fs::create_directories(root_ / "share/dlcp");
  fs::create_directories(root_ / "1/2/3");
  EXPECT_EQ(find_data_dir(root_ / "1/2/3", 3), root_ / "share/dlcp");
  EXPECT_FALSE(find_data_dir(root_ / "1/2/3", 2).has_value());
}

TEST_F(DataFiles, AFileNamedLikeTheDirectoryIsNotIt) {
  fs::create_directories(root_ / "x/share");
  std::ofstream(root_ / "x/share/dlcp") << "not a directory";
  fs::create_directories(root_ / "x/bin");
  EXPECT_FALSE(find_data_dir(root_ / "x/bin", 1).has_value());
}

TEST(DataDir, EnvironmentVariableOverridesTheSearch) {
  ASSERT_EQ(setenv("DLCP_DATA_DIR", "/somewhere/else", 1), 0);
  EXPECT_EQ(data_dir(), fs::path("/somewhere/else"));
  ASSERT_EQ(unsetenv("DLCP_DATA_DIR"), 0);
  // This test program lives in <build>/tests/testbed, whose build tree has share/dlcp.
  EXPECT_TRUE(fs::exists(data_dir() / "models" / "resnet50.json"));
}

}  // namespace
}  // namespace dlcp::workload
