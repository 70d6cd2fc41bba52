// The store suite runs against both stores: a SQLite file in a temporary
// directory, or a fresh database of the test process's PostgreSQL
// (test_postgres.hpp). StoreOptions says what a test needs; the PostgreSQL
// store takes the options it shares with SQLite (batch size, fault hook,
// clock, blob sizes).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "any_store.hpp"
#include "store_test_util.hpp"
#include "test_postgres.hpp"

namespace reprise::engine::testing {

enum class StoreKind { kSqlite, kPostgres };

inline std::string store_kind_name(const ::testing::TestParamInfo<StoreKind>& info) {
  return info.param == StoreKind::kSqlite ? "Sqlite" : "Postgres";
}

// A fixture's database: a file name in its temporary directory, or a new
// PostgreSQL database (skipped without PostgreSQL, failed under CI).
class StoreFixture : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    if (GetParam() == StoreKind::kSqlite) {
      db_ = dir_.file("store.db");
      return;
    }
    REPRISE_POSTGRES_DATABASE(url);
    db_ = url;
  }

  TempDir dir_;
  std::string db_;
};

}  // namespace reprise::engine::testing
