// lc_app_destroy called from inside one of the application's own calls — an observer run by
// lc_app_perform — ends the application (its observers are gone) but frees it only when that call
// returns: the call finishes on a live object and reports, and the program goes on.
#include "lifecycle.h"
#include <malloc.h>
#include <stdio.h>

static int warnings;

static void destroy_it(const lc_notification_t *note, void *ctx) {
    (void)note;
    warnings++;
    lc_app_destroy((lc_app *)ctx);
    printf("destroyed inside the observer\n");
}

static void count(const lc_notification_t *note, void *ctx) {
    (void)note, (void)ctx;
    warnings++;
}

int main(void) {
    // Freed memory is overwritten at once: a use after free of the application shows (a crash, a
    // garbage status) even without AddressSanitizer.
    mallopt(M_PERTURB, 0xa5);
    lc_app *app = NULL;
    if (lc_app_create(NULL, &app) != LC_OK) return 1;
    if (lc_app_observe(app, "didReceiveMemoryWarning", NULL, destroy_it, app, NULL) != LC_OK) return 1;
    if (lc_app_observe(app, "didReceiveMemoryWarning", NULL, count, NULL, NULL) != LC_OK) return 1;
    if (lc_app_perform_simple(app, LC_ACTION_LAUNCH) != LC_OK) return 1;
    lc_status status = lc_app_perform_simple(app, LC_ACTION_MEMORY_WARNING);
    printf("lc_app_perform returned %s\n", lc_status_name(status));
    // A second application on the same thread works as before.
    lc_app *other = NULL;
    if (lc_app_create(NULL, &other) != LC_OK) return 1;
    printf("another application: %s\n", lc_status_name(lc_app_perform_simple(other, LC_ACTION_LAUNCH)));
    lc_app_destroy(other);
    return 0;
}
