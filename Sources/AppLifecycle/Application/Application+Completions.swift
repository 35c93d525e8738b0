/// The completion handlers of fetch and remote-notification requests, and their budget.
extension Application {
    func startRequest(_ method: DelegateMethod, _ slot: DelegateSlot,
                              _ body: (FetchCompletionHandler) -> Void) throws(Killed)
    {
        let id = nextRequestID
        nextRequestID += 1
        let generation = self.generation
        let observer = slot.id
        let handler = FetchCompletionHandler { [weak self, loop] result, repeated in
            let complete: @Sendable () -> Void = { [weak self] in
                self?.completeRequest(id, generation, method, observer, result, repeated: repeated)
            }
            if loop.isOnLoopThread {
                complete()
            } else if let self {
                self.performForeign(.completion(delegate: observer), complete)
            }
        }
        let timer = loop.addTimer(after: configuration.budgets.completionHandler) { [weak self] in self?.requestTimedOut(id) }
        requests.append(Request(id: id, method: method, observer: observer, handler: handler, timer: timer))
        try call(method, slot) { body(handler) }
    }

    private func completeRequest(_ id: UInt64, _ generation: UInt64, _ method: DelegateMethod, _ observer: String,
                                 _ result: FetchResult, repeated: Bool)
    {
        guard generation == self.generation else { return }  // the application stopped since: nothing waits
        if repeated {
            trace(.completionCalledAgain(method: method, delegate: observer, result: result))
            return
        }
        // `requests` is in ascending ids (each the next of a counter): found by halving.
        let position = requests.sortedPosition(of: id) { $0.id }
        guard position.found else {
            trace(.completion(method: method, delegate: observer, result: result, late: true))
            return
        }
        requests[position.index].end()
        requests.remove(at: position.index)
        trace(.completion(method: method, delegate: observer, result: result, late: false))
        suspendIfIdle()
    }

    private func requestTimedOut(_ id: UInt64) {
        let position = requests.sortedPosition(of: id) { $0.id }
        guard position.found else { return }
        let index = position.index
        let request = requests[index]
        let report = WatchdogReport(observer: request.observer, event: "completion handler of \(request.method.selector)",
                                    budget: .completionHandler, of: configuration.budgets.completionHandler,
                                    elapsed: configuration.budgets.completionHandler, policy: configuration.watchdogPolicy,
                                    subject: .completionHandler(request.method))
        trace(.watchdogOverrun(report))
        killSwitch.overrun(report)
        if configuration.watchdogPolicy == .terminate {
            goNotRunning(.killedByWatchdog)
        } else {
            requests[index].end()
            requests.remove(at: index)
            suspendIfIdle()
        }
    }
}
