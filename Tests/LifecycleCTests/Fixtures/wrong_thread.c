// lc_app_state from a thread that is not the application's main thread: the engine's state is bound
// to its loop's thread, checked, so the program stops at the call with a message naming the member
// (a read from another thread would otherwise be a data race). LoopBoundABITests runs it.
#include "lifecycle.h"
#include <pthread.h>
#include <stdio.h>

static lc_app *app;

static void *other_thread(void *argument) {
    (void)argument;
    lc_state state = lc_app_state(app);
    printf("read from another thread: %d\n", (int)state);
    return NULL;
}

int main(void) {
    if (lc_app_create(NULL, &app) != LC_OK) return 2;
    printf("main thread: %d\n", (int)lc_app_state(app));
    fflush(stdout);
    pthread_t thread;
    if (pthread_create(&thread, NULL, other_thread, NULL) != 0) return 3;
    pthread_join(thread, NULL);
    lc_app_destroy(app);
    return 0;
}
