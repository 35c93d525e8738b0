// A test with deliberately wrong checks: options the kit refuses, and, after a launch, expectations
// that Sessions entered the background. TestKitTests checks the reports it prints, word for word, the
// summary, and the exit status.
#include <lifecycle_testkit.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    lct_options_t refused = {.struct_size = sizeof refused, .real_clock = 2};
    lct_harness *h = NULL;
    if (lct_harness_create(&refused, &h) == LC_OK || h != NULL) return 3;
    if (lct_harness_create(NULL, &h) != LC_OK) return 3;
    lct_load(h, argv[1]);
    lct_advance(h, 12.5); // the events below are at 12.5 s on the manual clock
    lct_perform(h, LC_ACTION_LAUNCH);
    lct_expect_delegate(h, "applicationDidEnterBackground");
    lct_expect_state(h, LC_STATE_ACTIVE);
    lct_expect_state(h, LC_STATE_BACKGROUND);
    lct_harness_destroy(h);
    return lct_summary("wrong_expectation");
}
