/// State preservation and restoration through the archive store. A delegate takes part only if it
/// implements both shouldSaveApplicationState and shouldRestoreApplicationState (`UIApplicationDelegate`: "Apps must
/// implement this method and the application:shouldRestoreApplicationState: method for state
/// preservation to occur"); one that implements only one of them is traced as skipped. A delegate
/// whose encoding fails in either call (`StateArchive.failure`) saves nothing: its previous archive is
/// kept, byte for byte, and traced (`archiveKept`).
extension Application {
    func preserveState() throws(Killed) {
        guard let store = archiveStore else { return }
        sweep(store)
        for slot in slots {
            guard let shouldSave = slot.handlers.shouldSaveApplicationState, isRegistered(slot) else { continue }
            guard slot.handlers.shouldRestoreApplicationState != nil else {
                trace(.delegateSkipped(method: .shouldSaveApplicationState, reason: .preservationNeedsBoth(delegate: slot.id)))
                continue
            }
            let archive = StateArchive()
            let saving = try call(.shouldSaveApplicationState, slot, { shouldSave(self, archive) })
            guard encodingHeld(archive, after: .shouldSaveApplicationState, slot), saving else { continue }
            if let encode = slot.handlers.willEncodeRestorableState {
                try call(.willEncodeRestorableState, slot) { encode(self, archive) }
                guard encodingHeld(archive, after: .willEncodeRestorableState, slot) else { continue }
            }
            do {
                try store.save(archive.values, id: slot.id)
                trace(.archive(.saved, delegate: slot.id, keys: archive.values.count))
            } catch {
                trace(.archiveFailed(.saved, delegate: slot.id, message: error.message))
            }
        }
    }

    /// After a call that may have filled `archive`: false, with an `archiveKept` event, when its
    /// encoding failed (nothing is saved: the previous archive stays as it was); else true.
    func encodingHeld(_ archive: StateArchive, after method: DelegateMethod, _ slot: DelegateSlot) -> Bool {
        guard let failure = archive.failure else { return true }
        trace(.archiveKept(method: method, delegate: slot.id, failure: failure))
        return false
    }

    func restoreState() throws(Killed) {
        guard let store = archiveStore else { return }
        sweep(store)
        for slot in slots {
            guard let shouldRestore = slot.handlers.shouldRestoreApplicationState, isRegistered(slot) else { continue }
            guard slot.handlers.shouldSaveApplicationState != nil else {
                trace(.delegateSkipped(method: .shouldRestoreApplicationState, reason: .preservationNeedsBoth(delegate: slot.id)))
                continue
            }
            let values: UserInfo?
            do {
                values = try store.load(id: slot.id)
            } catch {
                trace(.archiveFailed(.read, delegate: slot.id, message: error.message))
                continue
            }
            guard let values else { continue }
            trace(.archive(.read, delegate: slot.id, keys: values.count))
            let archive = StateArchive(values: values)
            guard try call(.shouldRestoreApplicationState, slot, { shouldRestore(self, archive) }) else { continue }
            if let decode = slot.handlers.didDecodeRestorableState {
                try call(.didDecodeRestorableState, slot) { decode(self, archive) }
            }
        }
    }

    /// Removes the temporary files of saves that were killed (see `ArchiveStore`): at launch and
    /// before each round of saves, in the folder about to be used. Logged, not traced.
    func sweep(_ store: ArchiveStore) {
        for name in store.removeStaleTemporaryFiles() {
            configuration.logger.info("archive: removed \(store.directory)/\(name), left by a save that did not finish")
        }
    }
}
