// Damages a database file the way a bad disk or a stray write does: garbage
// over the middle of one page of a table, found by walking the table's b-tree
// in the file itself. The file must be closed (its WAL checkpointed).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/store/sqlite_db.hpp"

namespace reprise::engine::testing {

// Overwrites the middle half of a leaf page of `table` (one from the middle of
// the table) with random bytes; returns its page number, 0 on failure.
inline int64_t damage_table_page(const std::string& path, const std::string& table) {
  int64_t page_size = 0, page = 0;
  {
    auto db = SqliteDb::open_read_only(path);
    if (!db.is_ok()) {
      ADD_FAILURE() << db.status().to_string();
      return 0;
    }
    auto size = (*db)->prepare_uncached("PRAGMA page_size");
    if (!size.is_ok() || !*size->step()) return 0;
    page_size = size->column_int(0);
    auto root = (*db)->prepare_uncached("SELECT rootpage FROM sqlite_schema WHERE name = '" + table + "'");
    if (!root.is_ok() || !*root->step()) {
      ADD_FAILURE() << "no table " << table;
      return 0;
    }
    page = root->column_int(0);
  }
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::vector<unsigned char> bytes(page_size);
  auto read_page = [&](int64_t n) {
    f.seekg((n - 1) * page_size);
    f.read(reinterpret_cast<char*>(bytes.data()), page_size);
  };
  auto u16 = [&](size_t at) { return (bytes[at] << 8) | bytes[at + 1]; };
  // Interior table pages (0x05) hold child page numbers: go down the middle.
  for (int depth = 0; depth < 10; ++depth) {
    read_page(page);
    const size_t header = page == 1 ? 100 : 0;
    if (bytes[header] == 0x0d) break;  // a leaf
    if (bytes[header] != 0x05) {
      ADD_FAILURE() << "page " << page << " of " << table << " has type " << int(bytes[header]);
      return 0;
    }
    const int cells = u16(header + 3);
    const size_t cell = u16(header + 12 + 2 * (cells / 2));
    page = (int64_t{bytes[cell]} << 24) | (bytes[cell + 1] << 16) | (bytes[cell + 2] << 8) | bytes[cell + 3];
  }
  std::mt19937 random(19);
  std::vector<char> garbage(page_size / 2);
  for (char& c : garbage) c = static_cast<char>(random());
  f.seekp((page - 1) * page_size + page_size / 4);
  f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  f.flush();
  EXPECT_TRUE(f.good());
  return page;
}

}  // namespace reprise::engine::testing
