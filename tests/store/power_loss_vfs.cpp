#include "power_loss_vfs.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

namespace reprise::engine::testing {

namespace {

// What the page cache holds of one file: its whole content as SQLite last
// wrote it, and which part of it the disk has not seen yet.
struct Image {
  std::string bytes;
  int64_t dirty_from = INT64_MAX;
  int64_t dirty_to = 0;
  bool truncated = false;  // shrunk since the last sync
};

struct State {
  std::mutex mu;
  sqlite3_vfs* base = nullptr;                           // the unix VFS underneath
  std::map<std::string, std::shared_ptr<Image>> images;  // by full path, kept after close like the page cache
  int64_t operations_left = -1;  // writes, truncations and syncs until the cut; -1: no cut planned
  bool cut = false;
  int64_t syncs = 0;
  bool full = false;          // every write fails with SQLITE_FULL
  int64_t failing_syncs = 0;  // syncs still to fail
};

State& state() {
  static State s;
  return s;
}

// A file opened through the images. The unix VFS's own file follows it in
// the same allocation (szOsFile covers both).
struct ImageFile {
  sqlite3_file base;
  std::shared_ptr<Image> image;
  sqlite3_file* real;
};

constexpr int kImageFileSize = (sizeof(ImageFile) + 7) & ~7;
constexpr int64_t kMostWrittenAtOnce = 64 << 10;

ImageFile* as_image(sqlite3_file* f) { return reinterpret_cast<ImageFile*>(f); }

// Counts one write, truncation or sync against the planned cut; false once
// the power is off. Called with the mutex held.
bool powered(State& s) {
  if (s.cut) return false;
  if (s.operations_left > 0 && --s.operations_left == 0) s.cut = true;
  return !s.cut;
}

int image_close(sqlite3_file* f) {
  ImageFile* file = as_image(f);
  const int rc = file->real->pMethods->xClose(file->real);
  file->image.~shared_ptr<Image>();
  return rc;
}

int image_read(sqlite3_file* f, void* out, int amount, sqlite3_int64 offset) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const std::string& bytes = as_image(f)->image->bytes;
  const int64_t available = std::clamp<int64_t>(static_cast<int64_t>(bytes.size()) - offset, 0, amount);
  if (available > 0) std::memcpy(out, bytes.data() + offset, available);
  if (available == amount) return SQLITE_OK;
  std::memset(static_cast<char*>(out) + available, 0, amount - available);
  return SQLITE_IOERR_SHORT_READ;
}

int image_write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!powered(s)) return SQLITE_IOERR_WRITE;
  if (s.full) return SQLITE_FULL;
  Image& image = *as_image(f)->image;
  if (static_cast<int64_t>(image.bytes.size()) < offset + amount) image.bytes.resize(offset + amount);
  std::memcpy(image.bytes.data() + offset, data, amount);
  image.dirty_from = std::min<int64_t>(image.dirty_from, offset);
  image.dirty_to = std::max<int64_t>(image.dirty_to, offset + amount);
  return SQLITE_OK;
}

int image_truncate(sqlite3_file* f, sqlite3_int64 size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!powered(s)) return SQLITE_IOERR_TRUNCATE;
  Image& image = *as_image(f)->image;
  if (static_cast<int64_t>(image.bytes.size()) > size) {
    image.bytes.resize(size);
    image.truncated = true;
    image.dirty_to = std::min<int64_t>(image.dirty_to, size);
  }
  return SQLITE_OK;
}

// Puts what the disk has not seen of the image on it, then syncs: fsync on
// any descriptor flushes the whole file, whichever connection wrote it.
int image_sync(sqlite3_file* f, int flags) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!powered(s)) return SQLITE_IOERR_FSYNC;
  if (s.failing_syncs > 0) {
    --s.failing_syncs;
    return SQLITE_IOERR_FSYNC;
  }
  ImageFile* file = as_image(f);
  Image& image = *file->image;
  sqlite3_file* real = file->real;
  // In pieces: the unix VFS writes at most 128 KiB a call (it masks the
  // length to 17 bits) and takes a longer write for a full disk.
  for (int64_t at = image.dirty_from; at < image.dirty_to; at += kMostWrittenAtOnce) {
    const int64_t n = std::min(kMostWrittenAtOnce, image.dirty_to - at);
    const int rc = real->pMethods->xWrite(real, image.bytes.data() + at, static_cast<int>(n), at);
    if (rc != SQLITE_OK) return rc;
  }
  if (image.truncated) {
    const int rc = real->pMethods->xTruncate(real, static_cast<sqlite3_int64>(image.bytes.size()));
    if (rc != SQLITE_OK) return rc;
  }
  const int rc = real->pMethods->xSync(real, flags);
  if (rc != SQLITE_OK) return rc;
  image.dirty_from = INT64_MAX;
  image.dirty_to = 0;
  image.truncated = false;
  ++s.syncs;
  return SQLITE_OK;
}

int image_file_size(sqlite3_file* f, sqlite3_int64* size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  *size = static_cast<sqlite3_int64>(as_image(f)->image->bytes.size());
  return SQLITE_OK;
}

int image_lock(sqlite3_file* f, int level) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xLock(real, level);
}

int image_unlock(sqlite3_file* f, int level) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xUnlock(real, level);
}

int image_check_reserved_lock(sqlite3_file* f, int* out) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xCheckReservedLock(real, out);
}

int image_file_control(sqlite3_file* f, int op, void* arg) {
  // Size hints and chunk sizes would grow the real file behind the image.
  if (op == SQLITE_FCNTL_SIZE_HINT || op == SQLITE_FCNTL_CHUNK_SIZE) return SQLITE_OK;
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xFileControl(real, op, arg);
}

int image_sector_size(sqlite3_file* f) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xSectorSize(real);
}

int image_device_characteristics(sqlite3_file* f) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xDeviceCharacteristics(real);
}

int image_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xShmMap(real, region, size, extend, out);
}

int image_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xShmLock(real, offset, n, flags);
}

void image_shm_barrier(sqlite3_file* f) {
  sqlite3_file* real = as_image(f)->real;
  real->pMethods->xShmBarrier(real);
}

int image_shm_unmap(sqlite3_file* f, int delete_flag) {
  sqlite3_file* real = as_image(f)->real;
  return real->pMethods->xShmUnmap(real, delete_flag);
}

// Version 2: shared memory but no xFetch, so SQLite never reads the real
// file through a memory map, around the image.
const sqlite3_io_methods kImageMethods = {
    2,
    image_close,
    image_read,
    image_write,
    image_truncate,
    image_sync,
    image_file_size,
    image_lock,
    image_unlock,
    image_check_reserved_lock,
    image_file_control,
    image_sector_size,
    image_device_characteristics,
    image_shm_map,
    image_shm_lock,
    image_shm_barrier,
    image_shm_unmap,
    nullptr,
    nullptr,
};

int vfs_open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  State& s = state();
  // Temporary files have nothing to lose at a power cut.
  if (name == nullptr || (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL)) == 0) {
    return s.base->xOpen(s.base, name, f, flags, out_flags);
  }
  {
    std::lock_guard lock(s.mu);
    if (s.cut) return SQLITE_CANTOPEN;
  }
  auto* file = reinterpret_cast<ImageFile*>(f);
  file->base.pMethods = nullptr;  // SQLite calls no xClose if the open fails
  sqlite3_file* real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + kImageFileSize);
  const int rc = s.base->xOpen(s.base, name, real, flags, out_flags);
  if (rc != SQLITE_OK) return rc;

  std::lock_guard lock(s.mu);
  std::shared_ptr<Image>& image = s.images[name];
  if (image == nullptr) {  // not in the page cache: read what is on disk
    image = std::make_shared<Image>();
    sqlite3_int64 size = 0;
    int read = real->pMethods->xFileSize(real, &size);
    image->bytes.resize(size);
    if (read == SQLITE_OK && size > 0) read = real->pMethods->xRead(real, image->bytes.data(), size, 0);
    if (read != SQLITE_OK) {
      s.images.erase(name);
      real->pMethods->xClose(real);
      return read;
    }
  }
  new (&file->image) std::shared_ptr<Image>(image);
  file->real = real;
  file->base.pMethods = &kImageMethods;
  return SQLITE_OK;
}

int vfs_delete(sqlite3_vfs*, const char* name, int sync_dir) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.cut) return SQLITE_IOERR_DELETE;
  s.images.erase(name);
  return s.base->xDelete(s.base, name, sync_dir);
}

int vfs_access(sqlite3_vfs*, const char* name, int flags, int* out) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const auto found = s.images.find(name);
  if (flags == SQLITE_ACCESS_EXISTS && found != s.images.end()) {
    // As the unix VFS answers: a regular file exists once it holds bytes.
    *out = found->second->bytes.empty() ? 0 : 1;
    return SQLITE_OK;
  }
  return s.base->xAccess(s.base, name, flags, out);
}

int vfs_full_pathname(sqlite3_vfs*, const char* name, int size, char* out) {
  return state().base->xFullPathname(state().base, name, size, out);
}
void* vfs_dl_open(sqlite3_vfs*, const char* name) { return state().base->xDlOpen(state().base, name); }
void vfs_dl_error(sqlite3_vfs*, int size, char* out) { state().base->xDlError(state().base, size, out); }
void (*vfs_dl_sym(sqlite3_vfs*, void* lib, const char* symbol))() {
  return state().base->xDlSym(state().base, lib, symbol);
}
void vfs_dl_close(sqlite3_vfs*, void* lib) { state().base->xDlClose(state().base, lib); }
int vfs_randomness(sqlite3_vfs*, int size, char* out) { return state().base->xRandomness(state().base, size, out); }
int vfs_sleep(sqlite3_vfs*, int micros) { return state().base->xSleep(state().base, micros); }
int vfs_current_time(sqlite3_vfs*, double* out) { return state().base->xCurrentTime(state().base, out); }
int vfs_get_last_error(sqlite3_vfs*, int size, char* out) {
  return state().base->xGetLastError(state().base, size, out);
}
int vfs_current_time_int64(sqlite3_vfs*, sqlite3_int64* out) {
  return state().base->xCurrentTimeInt64(state().base, out);
}

}  // namespace

PowerLossVfs::PowerLossVfs() {
  State& s = state();
  s.base = sqlite3_vfs_find(nullptr);
  if (s.base == nullptr) throw std::runtime_error("SQLite has no default VFS");
  static sqlite3_vfs vfs = {
      2,
      kImageFileSize + s.base->szOsFile,
      s.base->mxPathname,
      nullptr,
      kName,
      nullptr,
      vfs_open,
      vfs_delete,
      vfs_access,
      vfs_full_pathname,
      vfs_dl_open,
      vfs_dl_error,
      vfs_dl_sym,
      vfs_dl_close,
      vfs_randomness,
      vfs_sleep,
      vfs_current_time,
      vfs_get_last_error,
      vfs_current_time_int64,
      nullptr,
      nullptr,
      nullptr,
  };
  if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) throw std::runtime_error("cannot register the power-loss VFS");
}

PowerLossVfs& PowerLossVfs::instance() {
  static PowerLossVfs vfs;
  return vfs;
}

void PowerLossVfs::cut_power_after(int64_t n) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.operations_left = n;
  s.cut = n <= 0;
}

bool PowerLossVfs::power_is_cut() const {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.cut;
}

void PowerLossVfs::restore_power() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.images.clear();
  s.operations_left = -1;
  s.cut = false;
  s.full = false;
  s.failing_syncs = 0;
}

int64_t PowerLossVfs::syncs() const {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.syncs;
}

void PowerLossVfs::set_disk_full(bool full) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.full = full;
}

bool PowerLossVfs::disk_full() const {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.full;
}

void PowerLossVfs::fail_next_syncs(int64_t n) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.failing_syncs = n;
}

int64_t PowerLossVfs::failing_syncs_left() const {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.failing_syncs;
}

void PowerLossVfs::clear_planned_faults() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.full = false;
  s.failing_syncs = 0;
  if (!s.cut) s.operations_left = -1;
}

}  // namespace reprise::engine::testing
