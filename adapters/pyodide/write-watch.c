/*
 * Which pages of the interpreter's linear memory a run wrote, from the kernel, so that putting the memory back costs
 * the pages written rather than a comparison of all of it (child-guard.js, `memorySnapshot`).
 *
 * Linux ≥ 6.7: a userfaultfd registers the memory for write protection in asynchronous mode (a write to a protected
 * page is let through by the kernel, which clears the page's protection: no fault reaches us), and the PAGEMAP_SCAN
 * ioctl lists the pages whose protection is gone. Writes by the kernel into the memory (a read(2) into it) count too.
 * After copying the written pages back from the snapshot, they are protected again; pages every run writes are
 * left unprotected and copied back after each run (see `hits`).
 *
 * A Node-API module with the few declarations it uses written out, so that it builds with one `cc` call and no
 * headers or downloads (scripts/build-write-watch.mjs). Node-API's C ABI is stable across Node versions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_ref__ *napi_ref;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status;
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);
napi_status napi_get_cb_info(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *, void **);
napi_status napi_get_arraybuffer_info(napi_env, napi_value, void **, size_t *);
napi_status napi_get_buffer_info(napi_env, napi_value, void **, size_t *);
napi_status napi_create_reference(napi_env, napi_value, uint32_t, napi_ref *);
napi_status napi_create_double(napi_env, double, napi_value *);
napi_status napi_get_value_bool(napi_env, napi_value, _Bool *);
napi_status napi_throw_error(napi_env, const char *, const char *);
napi_status napi_create_function(napi_env, const char *, size_t, napi_callback, void *, napi_value *);
napi_status napi_set_named_property(napi_env, napi_value, const char *, napi_value);

/* Linux 6.7's PAGEMAP_SCAN and userfaultfd features, declared here: older kernel headers lack them. */
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define FEATURE_WP_UNPOPULATED (1ULL << 13)
#define FEATURE_WP_ASYNC (1ULL << 15)
struct page_region {
  uint64_t start, end, categories;
};
struct pm_scan_arg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_CHECK_WPASYNC (1ULL << 1)
#define PAGE_IS_WRITTEN (1ULL << 1)
#define PAGE 4096

static int uffd = -1, pagemap = -1;
static uint8_t *live, *saved;
static size_t length;
static napi_ref keep_live, keep_saved;

/*
 * Pages every run writes (the interpreter's stack, its allocator's hot arenas: ~290 for `1 + 1`) cost a write fault
 * each run once protected (~0.85 us each), more than copying them back unasked (~0.2 us). So the pages written in
 * each of the first LEARN_RUNS runs become "hot": left unprotected and copied back after every run, whatever it
 * wrote. At most HOT_MAX of them, so that runs which write much at first cannot make every later restore dear.
 */
#define LEARN_RUNS 8
#define HOT_MAX 2048
static uint8_t *hits;            /* per page: of the learning runs, how many wrote it; NULL once learned */
static uint8_t *hot;             /* per page: 1 when hot */
static struct uffdio_range hot_ranges[HOT_MAX];
static size_t hot_range_count;
static int learned_runs;

static napi_value fail(napi_env env, const char *what) {
  char message[160];
  snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
  napi_throw_error(env, NULL, message);
  return NULL;
}

static int protect(uint64_t start, uint64_t len) {
  struct uffdio_writeprotect wp = {.range = {start, len}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
  return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
}

/* watch(memory: ArrayBuffer, saved: Buffer): from now on, writes to `memory` are recorded. Once per process. */
static napi_value watch(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  void *memory_data, *saved_data;
  size_t memory_length, saved_length;
  if (uffd >= 0) return napi_throw_error(env, NULL, "already watching"), NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) || argc < 2 ||
      napi_get_arraybuffer_info(env, argv[0], &memory_data, &memory_length) ||
      napi_get_buffer_info(env, argv[1], &saved_data, &saved_length))
    return napi_throw_error(env, NULL, "watch(memory: ArrayBuffer, saved: Buffer)"), NULL;
  if (memory_length != saved_length || memory_length == 0 || memory_length % PAGE || (uintptr_t)memory_data % PAGE)
    return napi_throw_error(env, NULL, "the memory and its copy must be the same whole pages"), NULL;
  int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
  if (fd < 0) return fail(env, "userfaultfd");
  struct uffdio_api api = {.api = UFFD_API, .features = FEATURE_WP_ASYNC | FEATURE_WP_UNPOPULATED};
  if (ioctl(fd, UFFDIO_API, &api)) return close(fd), fail(env, "asynchronous write protection");
  struct uffdio_register registration = {.range = {(uintptr_t)memory_data, memory_length},
                                         .mode = UFFDIO_REGISTER_MODE_WP};
  if (ioctl(fd, UFFDIO_REGISTER, &registration)) return close(fd), fail(env, "registering the memory");
  int map = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (map < 0) return close(fd), fail(env, "/proc/self/pagemap");
  uffd = fd;
  pagemap = map;
  if (protect((uintptr_t)memory_data, memory_length)) return fail(env, "protecting the memory");
  hits = calloc(memory_length / PAGE, 1);
  hot = calloc(memory_length / PAGE, 1);
  if (!hits || !hot) return napi_throw_error(env, NULL, "out of memory"), NULL;
  live = memory_data;
  saved = saved_data;
  length = memory_length;
  // The pointers stay valid while both objects live: held here for the process's life.
  napi_create_reference(env, argv[0], 1, &keep_live);
  napi_create_reference(env, argv[1], 1, &keep_saved);
  return NULL;
}

/* After the last learning run: the pages every learning run wrote become hot, and are unprotected for good. */
static int learn(void) {
  size_t pages = length / PAGE, taken = 0;
  for (size_t page = 0; page < pages && taken < HOT_MAX; page++) {
    if (hits[page] != LEARN_RUNS) continue;
    hot[page] = 1;
    taken++;
    uint64_t address = (uintptr_t)live + page * PAGE;
    struct uffdio_range *last = hot_range_count ? &hot_ranges[hot_range_count - 1] : NULL;
    if (last && last->start + last->len == address) last->len += PAGE;
    else hot_ranges[hot_range_count++] = (struct uffdio_range){address, PAGE};
  }
  free(hits);
  hits = NULL;
  for (size_t i = 0; i < hot_range_count; i++) {
    struct uffdio_writeprotect unprotect = {.range = hot_ranges[i], .mode = 0};
    if (ioctl(uffd, UFFDIO_WRITEPROTECT, &unprotect)) return -1;
  }
  return 0;
}

/*
 * Copies back and protects again each page written since the last call that is not hot, counting it for learning
 * when `learning`; answers the pages copied, or -1 when the kernel could not say.
 */
static double copy_back_written(int learning) {
  struct page_region regions[256];
  uint64_t cursor = (uintptr_t)live, end = (uintptr_t)live + length;
  double pages = 0;
  while (cursor < end) {
    // CHECK_WPASYNC: the call fails if any of the range is no longer registered (a remapping), rather than
    // reporting its pages unwritten.
    struct pm_scan_arg scan = {.size = sizeof scan,
                               .flags = PM_SCAN_CHECK_WPASYNC,
                               .start = cursor,
                               .end = end,
                               .vec = (uintptr_t)regions,
                               .vec_len = 256,
                               .category_mask = PAGE_IS_WRITTEN,
                               .return_mask = PAGE_IS_WRITTEN};
    long found = ioctl(pagemap, PAGEMAP_SCAN, &scan);
    if (found < 0 || scan.walk_end <= cursor || scan.walk_end > end) return -1;
    for (long i = 0; i < found; i++) {
      uint64_t start = regions[i].start, stop = regions[i].end;
      if (start < cursor || stop > scan.walk_end || start >= stop) return -1;
      // Runs of pages that are not hot, each copied back and protected in one call.
      size_t first = (start - (uintptr_t)live) / PAGE, after = (stop - (uintptr_t)live) / PAGE;
      for (size_t page = first; page < after;) {
        if (hot[page]) {
          page++;
          continue;
        }
        size_t run_end = page;
        while (run_end < after && !hot[run_end]) {
          if (learning && hits) hits[run_end]++;
          run_end++;
        }
        size_t offset = page * PAGE, bytes = (run_end - page) * PAGE;
        memcpy(live + offset, saved + offset, bytes);
        if (protect((uintptr_t)live + offset, bytes)) return -1;
        pages += (double)(run_end - page);
        page = run_end;
      }
    }
    cursor = scan.walk_end;
  }
  return pages;
}

/*
 * restore(learning): puts back every page written since the last call (copied from the saved copy and protected
 * again) and every hot page. Answers the number of pages put back, or -1 when the kernel could not say (the caller
 * then replaces the process). `learning` is false for the guard's own proof at start, which is no run.
 */
static napi_value restore(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], answer;
  _Bool learning = 0;
  double pages = -1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == 0 && argc >= 1) napi_get_value_bool(env, argv[0], &learning);
  if (uffd >= 0) {
    pages = copy_back_written(learning);
    for (size_t i = 0; pages >= 0 && i < hot_range_count; i++) {
      size_t offset = hot_ranges[i].start - (uintptr_t)live;
      memcpy(live + offset, saved + offset, hot_ranges[i].len);
      pages += (double)(hot_ranges[i].len / PAGE);
    }
    if (pages >= 0 && learning && hits && ++learned_runs == LEARN_RUNS && learn()) pages = -1;
  }
  napi_create_double(env, pages, &answer);
  return answer;
}

napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value function;
  napi_create_function(env, "watch", (size_t)-1, watch, NULL, &function);
  napi_set_named_property(env, exports, "watch", function);
  napi_create_function(env, "restore", (size_t)-1, restore, NULL, &function);
  napi_set_named_property(env, exports, "restore", function);
  return exports;
}
