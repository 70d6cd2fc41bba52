#include "engine/store/sync_counting_vfs.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cstring>

namespace reprise::engine {

namespace {

// A file opened through the VFS: our methods, then the base VFS's file
// (szOsFile bytes) right after.
struct CountingFile {
  sqlite3_file file;  // first: SQLite sees a CountingFile as a sqlite3_file
  sqlite3_io_methods methods;
  std::atomic<int64_t>* syncs;       // null: a file whose syncs are not counted
  std::atomic<int64_t>* sync_nanos;  // the time they took
  sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
};

CountingFile* as_counting(sqlite3_file* f) { return reinterpret_cast<CountingFile*>(f); }
sqlite3_file* real(sqlite3_file* f) { return as_counting(f)->real(); }

int count_sync(sqlite3_file* f, int flags) {
  CountingFile* c = as_counting(f);
  const auto start = std::chrono::steady_clock::now();
  const int rc = c->real()->pMethods->xSync(c->real(), flags);
  if (rc == SQLITE_OK && c->syncs != nullptr) {
    c->syncs->fetch_add(1, std::memory_order_relaxed);
    c->sync_nanos->fetch_add((std::chrono::steady_clock::now() - start).count(), std::memory_order_relaxed);
  }
  return rc;
}

int close_file(sqlite3_file* f) {
  const int rc = real(f)->pMethods->xClose(real(f));
  f->pMethods = nullptr;
  return rc;
}

// Every other method passes straight through to the real file.
int read(sqlite3_file* f, void* b, int n, sqlite3_int64 o) { return real(f)->pMethods->xRead(real(f), b, n, o); }
int write(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
  return real(f)->pMethods->xWrite(real(f), b, n, o);
}
int truncate(sqlite3_file* f, sqlite3_int64 size) { return real(f)->pMethods->xTruncate(real(f), size); }
int file_size(sqlite3_file* f, sqlite3_int64* size) { return real(f)->pMethods->xFileSize(real(f), size); }
int lock(sqlite3_file* f, int level) { return real(f)->pMethods->xLock(real(f), level); }
int unlock(sqlite3_file* f, int level) { return real(f)->pMethods->xUnlock(real(f), level); }
int check_reserved(sqlite3_file* f, int* out) { return real(f)->pMethods->xCheckReservedLock(real(f), out); }
int file_control(sqlite3_file* f, int op, void* arg) { return real(f)->pMethods->xFileControl(real(f), op, arg); }
int sector_size(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
int device_characteristics(sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); }
int shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** p) {
  return real(f)->pMethods->xShmMap(real(f), region, size, extend, p);
}
int shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
}
void shm_barrier(sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); }
int shm_unmap(sqlite3_file* f, int delete_flag) { return real(f)->pMethods->xShmUnmap(real(f), delete_flag); }
int fetch(sqlite3_file* f, sqlite3_int64 o, int n, void** p) { return real(f)->pMethods->xFetch(real(f), o, n, p); }
int unfetch(sqlite3_file* f, sqlite3_int64 o, void* p) { return real(f)->pMethods->xUnfetch(real(f), o, p); }

SyncCountingVfs* owner(sqlite3_vfs* vfs) { return static_cast<SyncCountingVfs*>(vfs->pAppData); }

int open_file(sqlite3_vfs* vfs, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  SyncCountingVfs* self = owner(vfs);
  CountingFile* c = as_counting(f);
  const int rc = self->base()->xOpen(self->base(), name, c->real(), flags, out_flags);
  if (c->real()->pMethods == nullptr) {
    f->pMethods = nullptr;  // nothing to close
    return rc;
  }
  const sqlite3_io_methods* m = c->real()->pMethods;
  c->methods = sqlite3_io_methods{m->iVersion,
                                  close_file,
                                  read,
                                  write,
                                  truncate,
                                  count_sync,
                                  file_size,
                                  lock,
                                  unlock,
                                  check_reserved,
                                  file_control,
                                  sector_size,
                                  device_characteristics,
                                  m->iVersion >= 2 ? shm_map : nullptr,
                                  m->iVersion >= 2 ? shm_lock : nullptr,
                                  m->iVersion >= 2 ? shm_barrier : nullptr,
                                  m->iVersion >= 2 ? shm_unmap : nullptr,
                                  m->iVersion >= 3 ? fetch : nullptr,
                                  m->iVersion >= 3 ? unfetch : nullptr};
  c->syncs = (flags & SQLITE_OPEN_MAIN_DB) != 0 ? &self->database_syncs_counter()
             : (flags & SQLITE_OPEN_WAL) != 0   ? &self->wal_syncs_counter()
                                                : nullptr;
  c->sync_nanos = &self->sync_nanos_counter();
  f->pMethods = &c->methods;
  return rc;
}

int delete_file(sqlite3_vfs* v, const char* n, int sync) {
  return owner(v)->base()->xDelete(owner(v)->base(), n, sync);
}
int access(sqlite3_vfs* v, const char* n, int flags, int* out) {
  return owner(v)->base()->xAccess(owner(v)->base(), n, flags, out);
}
int full_pathname(sqlite3_vfs* v, const char* n, int size, char* out) {
  return owner(v)->base()->xFullPathname(owner(v)->base(), n, size, out);
}
void* dl_open(sqlite3_vfs* v, const char* n) { return owner(v)->base()->xDlOpen(owner(v)->base(), n); }
void dl_error(sqlite3_vfs* v, int n, char* out) { owner(v)->base()->xDlError(owner(v)->base(), n, out); }
void (*dl_sym(sqlite3_vfs* v, void* h, const char* s))(void) {
  return owner(v)->base()->xDlSym(owner(v)->base(), h, s);
}
void dl_close(sqlite3_vfs* v, void* h) { owner(v)->base()->xDlClose(owner(v)->base(), h); }
int randomness(sqlite3_vfs* v, int n, char* out) { return owner(v)->base()->xRandomness(owner(v)->base(), n, out); }
int sleep(sqlite3_vfs* v, int us) { return owner(v)->base()->xSleep(owner(v)->base(), us); }
int current_time(sqlite3_vfs* v, double* out) { return owner(v)->base()->xCurrentTime(owner(v)->base(), out); }
int last_error(sqlite3_vfs* v, int n, char* out) { return owner(v)->base()->xGetLastError(owner(v)->base(), n, out); }
int current_time_int64(sqlite3_vfs* v, sqlite3_int64* out) {
  return owner(v)->base()->xCurrentTimeInt64(owner(v)->base(), out);
}

std::atomic<int64_t> next_instance{0};

}  // namespace

Result<std::unique_ptr<SyncCountingVfs>> SyncCountingVfs::create(const std::string& base) {
  sqlite3_vfs* real = sqlite3_vfs_find(base.empty() ? nullptr : base.c_str());
  if (real == nullptr) return Status::failed_precondition("no SQLite VFS named '" + base + "'");
  std::unique_ptr<SyncCountingVfs> self(new SyncCountingVfs());
  self->base_ = real;
  self->name_ = "reprise-sync-count-" + std::to_string(next_instance.fetch_add(1));
  self->vfs_ = std::make_unique<sqlite3_vfs>();
  sqlite3_vfs& v = *self->vfs_;
  std::memset(&v, 0, sizeof v);
  v.iVersion = 2;
  v.szOsFile = static_cast<int>(sizeof(CountingFile)) + real->szOsFile;
  v.mxPathname = real->mxPathname;
  v.zName = self->name_.c_str();
  v.pAppData = self.get();
  v.xOpen = open_file;
  v.xDelete = delete_file;
  v.xAccess = access;
  v.xFullPathname = full_pathname;
  v.xDlOpen = dl_open;
  v.xDlError = dl_error;
  v.xDlSym = dl_sym;
  v.xDlClose = dl_close;
  v.xRandomness = randomness;
  v.xSleep = sleep;
  v.xCurrentTime = current_time;
  v.xGetLastError = last_error;
  v.xCurrentTimeInt64 = real->iVersion >= 2 ? current_time_int64 : nullptr;
  const int rc = sqlite3_vfs_register(&v, 0);
  if (rc != SQLITE_OK) return Status::internal("cannot register SQLite VFS '" + self->name_ + "'");
  return self;
}

SyncCountingVfs::~SyncCountingVfs() {
  if (vfs_) sqlite3_vfs_unregister(vfs_.get());
}

}  // namespace reprise::engine
