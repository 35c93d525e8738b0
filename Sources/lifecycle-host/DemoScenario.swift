/// The demo scenario, built in so that `lifecycle-host demo` works from anywhere. The same text is
/// shipped as docs/scenarios/demo.scenario (a test keeps the two identical).
enum DemoScenario {
    static let text = """
        # The demo: every sequence of docs/lifecycle.md, with the four example plugins
        # (Echo, StateKeeper, Greeter, CacheTrimmer). `lifecycle-host demo` runs this file.
        launch                                  # willFinish, restoration, didFinish, didBecomeActive
        interrupt                               # an incoming call: willResignActive
        dismiss                                 # declined: didBecomeActive
        memory-warning critical                 # CacheTrimmer empties its cache
        time-change                             # the notification is posted before the delegate method
        home                                    # willResignActive, didEnterBackground; CacheTrimmer's task holds the app
        wait 200ms                              # the task ends and the app suspends
        time-change                             # queued while suspended...
        time-change                             # ...and coalesced with the first
        foreground                              # the queued change first, then willEnterForeground, didBecomeActive
        lock                                    # like Home, then protectedDataWillBecomeUnavailable
        wait 200ms
        unlock                                  # protectedDataDidBecomeAvailable first, then back to the foreground
        open-url greeter:hello source=com.example.mail
        interrupt
        accept                                  # the call is taken: to the background
        wait 200ms
        fetch                                   # woken: didEnterBackground first (CacheTrimmer's task holds the app), then the fetch
        wait 200ms
        remote-notification badge=3             # woken again for a push, didEnterBackground first
        wait 200ms
        purge                                   # memory pressure while suspended: no callback at all
        launch background                       # launched into the background; StateKeeper restores its counter
        wait 200ms
        expect-state suspended
        open-url greeter:again                  # brought to the foreground to open a URL
        terminate                               # willResignActive, didEnterBackground (saved there), willTerminate
        """
}
