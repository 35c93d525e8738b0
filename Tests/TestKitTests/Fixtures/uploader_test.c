// uploader_test.c: the upload's background task is ended by its expiration handler when the 30 s of
// background time run out (warned 5 s before the end), in no real time.
//   cc uploader_test.c $(pkg-config --cflags --libs lifecycle-testkit) -o uploader_test
#include <lifecycle_testkit.h>

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: uploader_test /absolute/path/to/uploader.so\n"), 2;
    lct_harness *h = NULL;
    if (lct_harness_create(NULL, &h) != LC_OK) return 1; // manual clock, 30 s of background time
    lct_load(h, argv[1]);
    lct_perform(h, LC_ACTION_LAUNCH);
    lct_perform(h, LC_ACTION_HOME);
    lct_expect_event(h, "background-task", "begin", "com.example.uploader");
    lct_advance(h, 24.5);
    lct_expect_nothing_more(h);                // still uploading, still in the background
    lct_advance(h, 5.5);                       // 30 s on the clock: the handler ran at 25 s
    lct_expect_event(h, "background-task", "expiring", "com.example.uploader");
    lct_expect_event(h, "background-task", "end", "com.example.uploader");
    lct_expect_state(h, LC_STATE_SUSPENDED);
    lct_expect_true(h, lct_event_at(h, lct_event_count(h) - 1)->time == 25.0);
    lct_expect_nothing_more(h);
    lct_harness_destroy(h);
    return lct_summary("uploader_test");
}
