/* accel_stream_set_name and accel_stream_get_name: the refusals (each
 * changing nothing), renaming, the getter's cut and length, names of
 * default streams, a destroyed stream's name going with it, and threads
 * renaming one stream at once. With ACCEL_TRACE set, the streams it names
 * do work before and after a rename (trace_check.py's "names" mode checks
 * the lane titles); with STREAM_NAMES_SNAPSHOT set, it writes
 * accel_memory_snapshot there while a named stream holds memory (checked
 * for "stream_name" by the same mode). Exits non-zero on any unexpected
 * status or name. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

#define CHECK(call, want)                                                                    \
  do {                                                                                       \
    accel_status_t st_ = (call);                                                             \
    if (st_ != (want)) {                                                                     \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__, __LINE__, #call, \
              accel_status_name(st_), accel_status_name(want), accel_last_error());          \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* The stream's name, which must be `want`. */
static void expect_name(accel_stream_t s, const char* want, int line) {
  char buf[ACCEL_STREAM_NAME_MAX + 1];
  size_t len = 99;
  CHECK(accel_stream_get_name(s, buf, sizeof buf, &len), ACCEL_SUCCESS);
  if (strcmp(buf, want) != 0 || len != strlen(want)) {
    fprintf(stderr, "line %d: the stream is named '%s' (length %zu), expected '%s'\n", line, buf,
            len, want);
    exit(1);
  }
}

/* set_name(s, name) is refused with a message holding `why`, and the
 * stream keeps the name `kept` (not checked when NULL). */
static void expect_refused(accel_stream_t s, const char* name, const char* why, const char* kept,
                           int line) {
  accel_status_t st = accel_stream_set_name(s, name);
  if (st != ACCEL_ERROR_INVALID_ARGUMENT || strstr(accel_last_error(), why) == NULL) {
    fprintf(stderr,
            "line %d: accel_stream_set_name returned %s (%s), expected a refusal saying '%s'\n",
            line, accel_status_name(st), accel_last_error(), why);
    exit(1);
  }
  if (kept != NULL) expect_name(s, kept, line);
}

static void refusals(accel_stream_t s, const char* kept) {
  char longest[ACCEL_STREAM_NAME_MAX + 2];
  memset(longest, 'x', sizeof longest - 1);
  longest[sizeof longest - 1] = '\0'; /* ACCEL_STREAM_NAME_MAX + 1 bytes */
  expect_refused(s, longest, "longer than ACCEL_STREAM_NAME_MAX", kept, __LINE__);
  expect_refused(s, "", "name is empty", kept, __LINE__);
  expect_refused(s, NULL, "name is NULL", kept, __LINE__);
  expect_refused(s, "tab\there", "byte 3 is 0x09", kept, __LINE__);
  expect_refused(s, "new\nline", "byte 3 is 0x0a", kept, __LINE__);
  expect_refused(s, "del\x7f", "byte 3 is 0x7f", kept, __LINE__);
  expect_refused(s, "caf\xc3\xa9", "byte 3 is 0xc3", kept, __LINE__);
  expect_refused(NULL, "fine", "stream is NULL", NULL, __LINE__);
}

static void getter(accel_stream_t s) {
  char small[4];
  size_t len = 0;
  CHECK(accel_stream_get_name(s, small, sizeof small, &len), ACCEL_SUCCESS);
  if (strcmp(small, "pip") != 0 || len != strlen("pipeline A")) {
    fprintf(stderr, "a 4-byte buffer holds '%s' (length %zu)\n", small, len);
    exit(1);
  }
  len = 0;
  CHECK(accel_stream_get_name(s, NULL, 0, &len), ACCEL_SUCCESS);
  if (len != strlen("pipeline A")) exit(1);
  CHECK(accel_stream_get_name(s, NULL, 5, &len), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_stream_get_name(s, small, sizeof small, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_stream_get_name(NULL, small, sizeof small, &len), ACCEL_ERROR_INVALID_ARGUMENT);
}

static const char* const kThreadNames[] = {"worker one", "worker two", "worker three"};

static void* renamer(void* arg) {
  accel_stream_t s = (accel_stream_t)arg;
  for (int i = 0; i < 500; ++i) {
    CHECK(accel_stream_set_name(s, kThreadNames[i % 3]), ACCEL_SUCCESS);
    char buf[ACCEL_STREAM_NAME_MAX + 1];
    size_t len = 0;
    CHECK(accel_stream_get_name(s, buf, sizeof buf, &len), ACCEL_SUCCESS);
    if (strcmp(buf, kThreadNames[0]) != 0 && strcmp(buf, kThreadNames[1]) != 0 &&
        strcmp(buf, kThreadNames[2]) != 0) {
      fprintf(stderr, "a reader saw the name '%s', which no thread set\n", buf);
      exit(1);
    }
  }
  return NULL;
}

static void threads(void) {
  accel_stream_t s = NULL;
  CHECK(accel_stream_create(-1, 0, &s), ACCEL_SUCCESS);
  pthread_t t[4];
  for (int i = 0; i < 4; ++i)
    if (pthread_create(&t[i], NULL, renamer, s) != 0) exit(1);
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  CHECK(accel_stream_destroy(s), ACCEL_SUCCESS);
}

static void write_snapshot(const char* path) {
  size_t len = 0;
  CHECK(accel_memory_snapshot(-1, NULL, 0, &len), ACCEL_SUCCESS);
  char* text = malloc(len + 1);
  if (text == NULL) exit(1);
  CHECK(accel_memory_snapshot(-1, text, len + 1, &len), ACCEL_SUCCESS);
  FILE* f = fopen(path, "w");
  if (f == NULL || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  free(text);
}

int main(void) {
  if (accel_device_count() < 1) {
    printf("SKIP: no accelerator: %s\n", accel_selection_reason());
    return 77;
  }
  CHECK(accel_record_memory_history(1000), ACCEL_SUCCESS);
  accel_stream_t s = NULL;
  CHECK(accel_stream_create(-1, 0, &s), ACCEL_SUCCESS);
  expect_name(s, "", __LINE__);
  refusals(s, "");
  /* Named, used (its trace lane is made with this name), renamed. */
  CHECK(accel_stream_set_name(s, "first name"), ACCEL_SUCCESS);
  void* p = NULL;
  CHECK(accel_malloc_async(4096, s, &p), ACCEL_SUCCESS);
  CHECK(accel_memset_async(p, 1, 4096, s), ACCEL_SUCCESS);
  CHECK(accel_stream_synchronize(s), ACCEL_SUCCESS);
  CHECK(accel_trace_flush(), ACCEL_SUCCESS);
  char longest[ACCEL_STREAM_NAME_MAX + 1];
  memset(longest, 'y', sizeof longest - 1);
  longest[sizeof longest - 1] = '\0';
  CHECK(accel_stream_set_name(s, longest), ACCEL_SUCCESS);
  expect_name(s, longest, __LINE__);
  CHECK(accel_stream_set_name(s, "pipeline A"), ACCEL_SUCCESS);
  expect_name(s, "pipeline A", __LINE__);
  refusals(s, "pipeline A");
  getter(s);
  CHECK(accel_memset_async(p, 2, 4096, s), ACCEL_SUCCESS);
  /* The default stream, named through its handle. */
  accel_stream_t def = NULL;
  CHECK(accel_current_stream(-1, &def), ACCEL_SUCCESS);
  CHECK(accel_stream_set_name(def, "main"), ACCEL_SUCCESS);
  expect_name(def, "main", __LINE__);
  void* q = NULL;
  CHECK(accel_malloc_async(4096, def, &q), ACCEL_SUCCESS);
  CHECK(accel_memset_async(q, 3, 4096, def), ACCEL_SUCCESS);
  /* An unnamed stream keeps no name in the snapshot or its lane. */
  accel_stream_t plain = NULL;
  CHECK(accel_stream_create(-1, 0, &plain), ACCEL_SUCCESS);
  void* r = NULL;
  CHECK(accel_malloc_async(1 << 20, plain, &r), ACCEL_SUCCESS);
  CHECK(accel_memset_async(r, 4, 1 << 20, plain), ACCEL_SUCCESS);
  CHECK(accel_synchronize(-1), ACCEL_SUCCESS);
  const char* snap = getenv("STREAM_NAMES_SNAPSHOT");
  if (snap != NULL) write_snapshot(snap);
  CHECK(accel_free_async(p, s), ACCEL_SUCCESS);
  CHECK(accel_free_async(q, def), ACCEL_SUCCESS);
  CHECK(accel_free_async(r, plain), ACCEL_SUCCESS);
  CHECK(accel_synchronize(-1), ACCEL_SUCCESS);
  /* A destroyed stream's name goes with it; a stream made later (maybe in
   * the same handle slot) starts unnamed. */
  CHECK(accel_stream_destroy(s), ACCEL_SUCCESS);
  CHECK(accel_stream_destroy(plain), ACCEL_SUCCESS);
  expect_refused(s, "late", "not a live stream", NULL, __LINE__);
  size_t len = 0;
  CHECK(accel_stream_get_name(s, NULL, 0, &len), ACCEL_ERROR_INVALID_ARGUMENT);
  accel_stream_t again = NULL;
  CHECK(accel_stream_create(-1, 0, &again), ACCEL_SUCCESS);
  expect_name(again, "", __LINE__);
  CHECK(accel_stream_destroy(again), ACCEL_SUCCESS);
  threads();
  CHECK(accel_trace_flush(), ACCEL_SUCCESS);
  printf("stream names: refusals, renames, getter, default stream and threads as expected\n");
  return 0;
}
