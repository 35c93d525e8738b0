/// An element of a `KeyedList`: found by its key, unique in the list.
package protocol KeyedElement {
    associatedtype Key: Hashable
    var key: Key { get }
}

extension Scene: KeyedElement {
    package var key: String { id }
}

extension SceneSession: KeyedElement {
    package var key: String { persistentIdentifier }
}

extension Application.OpenTask: KeyedElement {
    var key: BackgroundTaskID { id }
}

/// Elements in the order they were added, each found by its key: the application's connected scenes
/// and its scene sessions, which grow with the scenes a host opens (and an isolated plugin's process's
/// view of them), and its open background tasks, which grow with what plugins begin.
/// [loop-thread: the owner's]
///
/// Costs: finding, adding, replacing and removing one element O(1) (removal amortised: it leaves a
/// hole, and the holes are closed, in order, once they are half the slots); the first element O(1);
/// iterating O(count + holes), at most twice the count.
package struct KeyedList<Element: KeyedElement>: Sequence {
    package init() {}

    private var slots: [Element?] = []
    private var positions: [Element.Key: Int] = [:]
    /// The first element's slot (every one before it is a hole; `slots.count` when there is none).
    private var head = 0

    package var count: Int { positions.count }
    package var isEmpty: Bool { positions.isEmpty }

    /// The element with this key, or nil.
    package subscript(key: Element.Key) -> Element? {
        guard let position = positions[key] else { return nil }
        return slots[position]
    }

    package func contains(key: Element.Key) -> Bool { positions[key] != nil }

    /// The first element in order, or nil.
    package var first: Element? { head < slots.count ? slots[head] : nil }

    /// Adds `element` at the end. Its key must not be in the list.
    package mutating func append(_ element: Element) {
        precondition(positions[element.key] == nil, "KeyedList.append: the key '\(element.key)' is already in the list")
        positions[element.key] = slots.count
        slots.append(element)
    }

    /// Changes the element with this key in place; false when none has it. `body` must keep its key.
    @discardableResult
    package mutating func update(key: Element.Key, _ body: (inout Element) -> Void) -> Bool {
        guard let position = positions[key] else { return false }
        body(&slots[position]!)
        precondition(slots[position]!.key == key, "KeyedList.update: the element's key changed")
        return true
    }

    /// Takes out the element with this key, and returns it (nil: none has it).
    @discardableResult
    package mutating func remove(key: Element.Key) -> Element? {
        guard let position = positions.removeValue(forKey: key) else { return nil }
        let element = slots[position]
        slots[position] = nil
        if position == head {
            while head < slots.count, slots[head] == nil { head += 1 }
        }
        let holes = slots.count - positions.count
        if holes >= 16, holes * 2 >= slots.count { closeHoles() }
        return element
    }

    /// Changes every element in place, in order. `body` must keep their keys.
    package mutating func updateAll(_ body: (inout Element) -> Void) {
        for position in head..<slots.count where slots[position] != nil {
            body(&slots[position]!)
            precondition(positions[slots[position]!.key] == position, "KeyedList.updateAll: an element's key changed")
        }
    }

    package mutating func removeAll() {
        slots.removeAll()
        positions.removeAll()
        head = 0
    }

    /// The slots held now, holes included (tests: removals leave holes, at most about as many as
    /// the elements).
    package var storedSlots: Int { slots.count }

    /// The elements, in order: a new array.
    package var elements: [Element] { slots[head...].compactMap { $0 } }

    /// Moves the elements to the front, in order, and renumbers them.
    private mutating func closeHoles() {
        let kept: [Element] = slots[head...].compactMap { $0 }
        for (position, element) in kept.enumerated() { positions[element.key] = position }
        slots = kept
        head = 0
    }

    package struct Iterator: IteratorProtocol {
        fileprivate let slots: [Element?]
        fileprivate var position: Int

        package mutating func next() -> Element? {
            while position < slots.count {
                defer { position += 1 }
                if let element = slots[position] { return element }
            }
            return nil
        }
    }

    /// Iterates over the elements as they are now (a copy: the list may change meanwhile).
    package func makeIterator() -> Iterator { Iterator(slots: slots, position: head) }
}
