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
            if loop.isOnLoopThread { complete() } else { loop.perform(complete) }
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
            trace(.error, "completion handler called again", observer: observer, detail: "\(method.selector): the second call (\(result)) is ignored")
            return
        }
        guard let index = requests.firstIndex(where: { $0.id == id }) else {
            trace(.completion, method.selector, observer: observer, detail: "\(result), late: the watchdog had already ended the request")
            return
        }
        requests[index].end()
        requests.remove(at: index)
        trace(.completion, method.selector, observer: observer, detail: result.rawValue)
        suspendIfIdle()
    }

    private func requestTimedOut(_ id: UInt64) {
        guard let index = requests.firstIndex(where: { $0.id == id }) else { return }
        let request = requests[index]
        let report = WatchdogReport(observer: request.observer, event: "completion handler of \(request.method.selector)",
                                    budgetName: "completionHandler", budget: configuration.budgets.completionHandler,
                                    elapsed: configuration.budgets.completionHandler, policy: configuration.watchdogPolicy)
        trace(.watchdog, report.event, observer: request.observer, detail: report.description)
        killSwitch.overrun(report)
        if configuration.watchdogPolicy == .terminate {
            goNotRunning("killed by the watchdog")
        } else {
            requests[index].end()
            requests.remove(at: index)
            suspendIfIdle()
        }
    }
}
