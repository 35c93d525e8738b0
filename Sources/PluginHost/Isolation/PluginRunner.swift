import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC

/// The plugin-runner role: the isolated plugin's process (`lifecycle-plugin-runner plugin-runner --fd 3
/// --progress-fd 4`, started by the host).
///
/// It opens the one plugin the host names with the loader's own checks (`OpenedPlugin`), tells the
/// host its descriptor, runs `init` once the host says the id is free, binds its delegate functions
/// through the C layer's one bridge, and then serves the host's frames on its main thread, in order:
/// notifications to the plugin's observers, delegate calls (answering those that wait), timers,
/// expirations. What the plugin asks of the host goes back as frames (`RunnerHostAPI`). It exits after
/// `unload` (deinit run), when the host goes (end of file, or SIGKILL with the host), or when the host
/// breaks the protocol.
///
/// It is a child subreaper: every process its plugin starts stays below it, and is killed when it
/// exits or dies of a fatal signal (`lcs_kill_descendants_at_end`) or when the host kills it
/// (`ProcessContainment`).
package final class PluginRunner: @unchecked Sendable {
    // @unchecked: main-thread state, except `link` (thread-safe sending) and `quotas` (set before the
    // plugin's init, so before any plugin thread exists; only read afterwards).

    /// The runner of this process (one plugin a process), set before the plugin's init runs.
    // nonisolated(unsafe): set once in main() before any plugin code or thread runs; only read afterwards.
    nonisolated(unsafe) static var current: PluginRunner?

    let link: RunnerLink
    let handle: AppHandle
    let registrations = RunnerRegistrations()
    /// The proxies of the host's scenes this process has been told of.
    let scenes: RunnerScenes
    private var plugin: LoadedPlugin?
    /// The plugin's delegate functions, by row (`RunnerDelegates.invokers`).
    private var invokers: [RunnerDelegates.Invoker?] = []
    /// The plugin's quotas, as the host sent them with `proceed` (this process refuses calls past
    /// them; the host holds it to them too). Set before init runs.
    private(set) var quotas = PluginQuotas()

    private init(link: RunnerLink, handle: AppHandle) {
        self.link = link
        self.handle = handle
        scenes = RunnerScenes(handle: handle)
    }

    /// The runner executable's command for one runner (`lifecycle-plugin-runner plugin-runner --fd N
    /// --progress-fd M`): what a sanitizer build's server `exec`s (`lcs_runner_server`).
    package static let command = "plugin-runner"

    /// The runner's whole life, on the process's main thread. - Returns: the exit status (0).
    package static func main(socket: Int32, progress progressFD: Int32) -> Int32 {
        _ = lcs_die_with_parent()
        if getppid() == 1 { return 0 }  // the host went before the request took
        // What the plugin starts stays below this process (an orphan comes back to it, not to init),
        // and dies when it ends (`exit()`, a fatal signal) or is killed by the host (`ProcessContainment`).
        _ = lcs_become_subreaper()
        _ = lcs_kill_descendants_at_end()
        signal(SIGPIPE, SIG_IGN)
        lcs_close_from(max(socket, progressFD) + 1)
        guard let page = mmap(nil, RunnerProcess.pageSize, PROT_READ | PROT_WRITE, MAP_SHARED, progressFD, 0), page != MAP_FAILED else {
            RunnerLink.fatal("cannot map the progress page: \(String(cString: strerror(errno)))")
        }
        close(progressFD)
        let handle: AppHandle
        do { handle = try AppHandle(configuration: Configuration()) } catch { RunnerLink.fatal(error.message) }
        let link = RunnerLink(channel: FrameChannel(fd: socket), progress: page.assumingMemoryBound(to: UInt64.self), loop: handle.loop)
        let runner = PluginRunner(link: link, handle: handle)
        current = runner
        runner.start()
        return 0
    }

    // MARK: Loading

    /// The hello's fields. Read in a function of its own (as `readProceed`): a frame reader shares the
    /// channel's read buffer, so one still held at the next read would make that read copy the whole
    /// buffer (256 KiB, into fresh pages).
    private func readHello() -> (version: UInt32, options: UInt32, path: String) {
        var hello = link.waitForFrame()
        guard hello.kind == .hello, let version = try? hello.u32("version"), let options = try? hello.u32("load options"),
              let path = try? hello.string("path") else {
            RunnerLink.fatal("the host did not start with hello")
        }
        return (version, options, path)
    }

    /// The quotas the host's `proceed` gives; nil when it refused the plugin instead.
    private func readProceed() -> PluginQuotas? {
        var answer = link.waitForFrame()
        guard answer.kind == .proceed else { return nil }
        do {
            let quotas = try PluginQuotas.read(&answer)
            try answer.finish()
            return quotas
        } catch {
            RunnerLink.fatal(error.message)
        }
    }

    /// Points standard output and error at /dev/null (a scan: `PluginLoadOptions.silent`). What the
    /// runner itself reports goes over its channel, never to those.
    private static func silenceOutput() {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard null >= 0 else { return }  // nothing to point them at: the scan is merely not silent
        _ = dup2(null, STDOUT_FILENO)
        _ = dup2(null, STDERR_FILENO)
        close(null)
    }

    private func start() {
        let (version, options, path) = readHello()
        guard version == IsolationProtocol.version else {
            return loadFailed(lc_status(LC_ERR_VERSION),
                              "the plugin runner speaks isolation protocol \(IsolationProtocol.version), the host \(version) (use the same build)")
        }
        if PluginLoadOptions(rawValue: options).contains(.silent) { Self.silenceOutput() }
        let opened: OpenedPlugin
        do { opened = try OpenedPlugin.open(path, options: PluginLoadOptions(rawValue: options)) } catch {
            return loadFailed(error.status, error.reason)
        }
        link.send(flush: true) { out in
            out.begin(.described)
            out.string(opened.id)
            out.text(opened.version)  // free text: cut to 64 KiB, so that the descriptor always crosses
            out.text(opened.summary)
            out.u32(opened.abiMajor)
            out.u32(opened.abiMinor)
            out.end()
        }
        guard let granted = readProceed() else { return }  // refused by the host (a duplicate id): nothing ran
        quotas = granted
        handle.pluginQuotas = quotas

        let initialised = link.runCounted { () -> Result<LoadedPlugin, PluginRefusal> in
            do throws(PluginRefusal) { return .success(try handle.initialise(opened, hostTable: RunnerHostAPI.table)) } catch {
                return .failure(error)
            }
        }
        let plugin: LoadedPlugin
        switch initialised {
        case .success(let loaded): plugin = loaded
        case .failure(let error): return initDone(error.status, error.reason)
        }
        self.plugin = plugin
        let (handlers, rows) = plugin.bindDelegates()
        let sceneBound = plugin.bindSceneDelegates()
        invokers = RunnerDelegates.invokers(handlers, rows: rows, scenes: sceneBound, proxies: scenes, app: handle.app, link: link)
        initDone(lc_status(LC_OK), "", rows: rows.bits, sceneRows: sceneBound?.rows.bits ?? 0)

        // Held strongly: the runner lives as long as its process (its loop never returns; the
        // process exits), and an `unowned` reference cost a checked retain and release a frame.
        link.handler = { [self] frame in run(&frame) }
        link.plainHandler = { [self] plain in notify(plain) }
        do {
            _ = try handle.loop.addReader(fd: link.channel.fd) { [unowned self] in link.serve() }
            try handle.loop.run()
        } catch {
            RunnerLink.fatal(error.message)
        }
    }

    private func loadFailed(_ status: lc_status, _ reason: String) {
        link.send(flush: true) { out in
            out.begin(.loadFailed)
            out.i32(status)
            out.text(reason)
            out.end()
        }
    }

    private func initDone(_ status: lc_status, _ reason: String, rows: UInt64 = 0, sceneRows: UInt64 = 0) {
        link.send(flush: true) { out in
            out.begin(.initDone)
            out.i32(status)
            out.text(reason)
            out.u64(rows)
            out.u64(sceneRows)
            out.end()
        }
    }

    // MARK: Serving

    /// Runs one frame the host sent. [main-thread]
    private func run(_ frame: inout FrameReader) {
        do {
            switch frame.kind {
            case .notify:
                if let plain = frame.plainNotification() { return notify(plain) }  // a stream's usual frame kept by a request
                let name = link.hostName(try frame.name())
                let hostSender = try frame.u64("sender")
                let scene = try frame.u8("scene flag") != 0 ? try SceneSnapshot.read(&frame) : nil
                let info = try frame.dictionary("userInfo")
                notify(frame.word, name, scenes.localSender(hostSender, scene), info)
            case .delegate:
                let row = Int(try frame.u8("row"))
                let arguments = try DelegateArguments.read(&frame)
                guard row < invokers.count, let invoke = invokers[row] else {
                    RunnerLink.fatal("the host called delegate row \(row), which the plugin does not implement")
                }
                let answer = invoke.call(arguments)
                let failure = RunnerDelegates.takeEncodingFailure()
                if frame.word != 0 {
                    link.send(flush: true) { out in
                        out.begin(.result, word: frame.word)
                        out.u8(answer.answer ? 1 : 0)
                        out.dictionary(answer.archive)
                        if case .writeRefused(let function, let message)? = failure {
                            out.u8(1)
                            out.text(function)
                            out.text(message)
                        } else {
                            out.u8(0)
                        }
                        out.end()
                    }
                }
            case .timerFired:
                if let timer = registrations.timers.removeValue(forKey: frame.word) { timer.fn(timer.ctx) }
            case .expire:
                if let expiration = registrations.expirations.removeValue(forKey: frame.word) { expiration.fn(expiration.ctx) }
            case .sync:
                let id = frame.word
                link.send { out in
                    out.begin(.synced, word: id)
                    out.end()
                }
            case .unload:
                unload()
            case .requestEnded:
                // Its completion handler called from now on is late, as in the host's process.
                registrations.requests.removeValue(forKey: frame.word)?.markEnded()
            case .hello, .proceed, .refuse, .reply:
                RunnerLink.fatal("the host sent \(frame.kind) out of place")
            default:
                RunnerLink.fatal("the host sent a runner's frame kind \(frame.kind)")
            }
        } catch {
            RunnerLink.fatal(error.message)
        }
    }

    /// Tells the host that a call of the plugin was refused at the quota of `kind` (it traces it, and
    /// counts it towards cutting the plugin off). [thread-safe]
    func reportQuotaRefusal(_ kind: QuotaKind) {
        let during = link.handlingFrame
        link.send { out in
            out.begin(.quotaRefused, word: UInt64(kind.index))
            out.u64(during)
            out.end()
        }
    }

    /// Runs a plain notification (`PlainNotification`): its name by the host's id, no scene, no dictionary.
    private func notify(_ plain: PlainNotification) {
        notify(plain.word, link.hostName((plain.nameID, nil)), UInt(truncatingIfNeeded: plain.sender), nil)
    }

    /// Calls observer `token` (gone meanwhile: nothing) with a record laid out as `lc_notification_t`.
    private func notify(_ token: UInt64, _ name: NotificationName, _ sender: UInt, _ info: UserInfo?) {
        guard let observer = registrations.observer(token) else { return }
        let box = info.map { UserInfoBox($0) }
        withExtendedLifetime(box) {
            var record = lc_notification_t(struct_size: UInt32(MemoryLayout<lc_notification_t>.size), name_id: name.id,
                                           name: link.cString(of: name), sender: UnsafeRawPointer(bitPattern: sender),
                                           user_info: box?.opaque)
            observer.fn(&record, observer.ctx)
        }
    }

    /// Unloading: deinit, `unloaded`, exit.
    private func unload() {
        if let plugin {
            plugin.isActive = false
            plugin.descriptor.deinit?(plugin.state)
        }
        link.send(flush: true) { out in
            out.begin(.unloaded)
            out.end()
        }
        Glibc.exit(0)
    }
}
