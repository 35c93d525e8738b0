/// Something that reached the loop from another thread on a plugin's behalf — a post, queued work,
/// the end of a background task, a completion handler — held by a gate instead of run
/// (`Application.foreignInputGate`): a recording orders such input among the run's others, and its
/// replay runs each at the place the recording gives it, whenever the plugin's thread sends it.
///
/// [loop-thread] Made and run on the loop thread. `run` does what the loop would have done on
/// arrival; it runs at most once (a second call does nothing), and never if the gate drops it.
package final class ForeignInput {
    /// What arrived. Two inputs of one kind are told apart by their order only.
    package enum Kind: Equatable, Sendable, CustomStringConvertible {
        /// A post from another thread (`lc_app_post`, a plugin's `post` from its thread, an isolated
        /// plugin's post from a thread of its process).
        case post(NotificationName)
        /// Work queued with `perform_async` by `owner` ("" for the embedder's own).
        case work(owner: String)
        /// `end_background_task` from another thread.
        case endBackgroundTask(BackgroundTaskID)
        /// A fetch or remote-notification completion handler called from another thread, by the
        /// delegate that was asked.
        case completion(delegate: String)

        /// The words a recording gives it: `post NAME`, `work OWNER`, `end-background-task #ID`,
        /// `completion DELEGATE`.
        package var description: String {
            switch self {
            case .post(let name): "post \(name.rawValue)"
            case .work(let owner): "work \(owner)"
            case .endBackgroundTask(let id): "end-background-task #\(id.rawValue)"
            case .completion(let delegate): "completion \(delegate)"
            }
        }
    }

    package let kind: Kind
    private var body: (() -> Void)?

    package init(_ kind: Kind, _ body: @escaping () -> Void) {
        self.kind = kind
        self.body = body
    }

    /// Does what the loop would have done when it arrived. At most once.
    package func run() {
        guard let body else { return }
        self.body = nil
        body()
    }
}
