/// The actions a state machine returns for one event, in the order they must be
/// performed: at most four, stored inline, so returning them allocates nothing.
///
/// Machines return one of these from every event; their drivers iterate it and perform
/// each action on libevent. Appending a fifth action is a programming error (every
/// machine's events produce fewer, which its tests show): a debug build stops on it
/// (`ActionListOverflow.report`); a release build keeps serving, the newest action taking
/// the last slot, because a machine's last action is the one that ends something (`close`,
/// `finish`) and losing it would leak a connection.
struct ActionList<Action>: Sequence, IteratorProtocol {
    private var a0: Action?
    private var a1: Action?
    private var a2: Action?
    private var a3: Action?
    private(set) var count = 0
    private var position = 0

    init() {}

    init(_ action: Action) {
        a0 = action
        count = 1
    }

    init(_ first: Action, _ second: Action) {
        a0 = first
        a1 = second
        count = 2
    }

    var isEmpty: Bool { count == 0 }

    mutating func append(_ action: Action) {
        switch count {
        case 0: a0 = action
        case 1: a1 = action
        case 2: a2 = action
        case 3: a3 = action
        default:
            ActionListOverflow.report()
            a3 = action
            return
        }
        count += 1
    }

    mutating func append(contentsOf other: ActionList<Action>) {
        var other = other
        while let action = other.next() { append(action) }
    }

    mutating func next() -> Action? {
        defer { position += 1 }
        switch position {
        case 0 where count > 0: return a0
        case 1 where count > 1: return a1
        case 2 where count > 2: return a2
        case 3 where count > 3: return a3
        default: position = count; return nil
        }
    }
}

extension ActionList: Equatable where Action: Equatable {
    static func == (lhs: ActionList, rhs: ActionList) -> Bool { Array(lhs) == Array(rhs) }
}

/// What an `ActionList` overflow does besides keeping the newest action.
enum ActionListOverflow {
    /// Stops a debug build (nothing in a release build). Replaced only by the test that
    /// shows the release behaviour; the loops never write it.
    nonisolated(unsafe) static var report: () -> Void = {
        assertionFailure("a state machine returned more than four actions for one event")
    }
}
