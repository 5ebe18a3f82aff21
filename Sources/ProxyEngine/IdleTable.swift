import HTTP1

/// The pool's bookkeeping, without sockets: idle connections by origin, newest last.
///
/// An origin keeps its slot when its list empties, since the connection is usually back
/// within the exchange and removing and re-inserting a dictionary entry each time is
/// costly. The slot last used is tried before hashing, because a forward proxy's traffic
/// goes to few origins at a time, and hashing the authority (scheme, host, port through
/// SipHash) on every take and put is the larger part of the pool's cost on the loop.
/// Slots with nothing idle are swept when the table has doubled since the last sweep
/// (at least `sweepThreshold`).
struct IdleTable<Connection: AnyObject> {
    private struct Origin {
        let authority: HTTPAuthority
        var idle: [Connection]
    }
    private var origins: [Origin] = []
    private var slots: [HTTPAuthority: Int] = [:]
    private var recent: Int?
    private let sweepThreshold: Int
    private var sweepAt: Int

    init(sweepThreshold: Int = 64) {
        self.sweepThreshold = max(1, sweepThreshold)
        sweepAt = self.sweepThreshold
    }

    /// Origins with a slot, empty ones included.
    var originCount: Int { origins.count }
    /// Sweeps so far (tests: they must thin out as the table grows).
    private(set) var sweeps = 0

    private mutating func slot(_ authority: HTTPAuthority) -> Int? {
        if let recent, origins[recent].authority == authority { return recent }
        let found = slots[authority]
        if found != nil { recent = found }
        return found
    }

    mutating func count(_ authority: HTTPAuthority) -> Int { slot(authority).map { origins[$0].idle.count } ?? 0 }

    mutating func popLast(_ authority: HTTPAuthority) -> Connection? {
        guard let i = slot(authority) else { return nil }
        return origins[i].idle.popLast()
    }

    mutating func append(_ c: Connection, _ authority: HTTPAuthority) {
        if let i = slot(authority) {
            origins[i].idle.append(c)
            return
        }
        if origins.count >= sweepAt { sweep() }
        slots[authority] = origins.count
        recent = origins.count
        origins.append(Origin(authority: authority, idle: [c]))
    }

    /// Whether `c` was idle here (and is no longer).
    mutating func remove(_ c: Connection, _ authority: HTTPAuthority) -> Bool {
        guard let i = slot(authority), let at = origins[i].idle.firstIndex(where: { $0 === c }) else { return false }
        origins[i].idle.remove(at: at)
        return true
    }

    /// Empties the table; the connections that were idle.
    mutating func removeAll() -> [Connection] {
        let all = origins.flatMap(\.idle)
        origins.removeAll()
        slots.removeAll()
        recent = nil
        sweepAt = sweepThreshold
        return all
    }

    /// Drops the origins with nothing idle and renumbers the rest.
    private mutating func sweep() {
        origins.removeAll { $0.idle.isEmpty }
        slots.removeAll(keepingCapacity: true)
        for (i, origin) in origins.enumerated() { slots[origin.authority] = i }
        recent = nil
        sweepAt = max(sweepThreshold, 2 * origins.count)
        sweeps += 1
    }
}
