/// Input from other threads held by a gate (`ForeignInput`): what `lifecycle-host run --record` orders
/// and `replay` places.
extension Application {
    /// While non-nil, everything that reaches the loop from another thread on a plugin's behalf —
    /// posts, `perform_async` work, `end_background_task`, completion handlers — is handed to it
    /// instead of run; the gate runs each (`ForeignInput.run`) when it chooses. [loop-thread]
    ///
    /// What the engine posts to itself, timers and the loop's descriptors are not gated: they run in
    /// an order the application's own state decides.
    package var foreignInputGate: ((ForeignInput) -> Void)? {
        get {
            loop.preconditionOnLoopThread("Application.foreignInputGate")
            return center.foreignInputGate
        }
        set {
            loop.preconditionOnLoopThread("Application.foreignInputGate")
            center.foreignInputGate = newValue
        }
    }

    /// Runs `body` on the loop, from another thread, through the gate when one is set then.
    /// [thread-safe]
    package func performForeign(_ kind: ForeignInput.Kind, _ body: @escaping @Sendable () -> Void) {
        loop.perform { [weak self] in
            if let gate = self?.center.foreignInputGate { gate(ForeignInput(kind, body)) } else { body() }
        }
    }
}
