// The application's main-thread functions called from another thread (LoopBoundABITests runs it).
//   wrong_thread state    lc_app_state from another thread: the engine's state is bound to its loop's
//                         thread, checked, so the program stops at the call with a message naming it
//                         (a read from another thread would otherwise be a data race).
//   wrong_thread destroy  lc_app_destroy from another thread: refused (nothing destroyed, the last
//                         error says why); the main thread then still has the application.
#include "lifecycle.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static lc_app *app;
static int destroy;

static void *other_thread(void *argument) {
    (void)argument;
    if (destroy) {
        lc_app_destroy(app);
        printf("other thread: %s\n", lc_last_error_message());
        return NULL;
    }
    lc_state state = lc_app_state(app);
    printf("read from another thread: %d\n", (int)state);
    return NULL;
}

int main(int argc, char **argv) {
    destroy = argc > 1 && strcmp(argv[1], "destroy") == 0;
    if (lc_app_create(NULL, &app) != LC_OK) return 2;
    printf("main thread: %d\n", (int)lc_app_state(app));
    fflush(stdout);
    pthread_t thread;
    if (pthread_create(&thread, NULL, other_thread, NULL) != 0) return 3;
    pthread_join(thread, NULL);
    if (lc_app_perform_simple(app, LC_ACTION_LAUNCH) != LC_OK) return 4;
    printf("main thread after: %d\n", (int)lc_app_state(app));
    lc_app_destroy(app);
    return 0;
}
