import HTTP1
import XCTest
@testable import ProxyEngine

/// The upstream pool's bookkeeping (`IdleTable`), on plain objects.
final class IdleTableTests: XCTestCase {
    final class Connection {}
    let a = HTTPAuthority(scheme: "http", host: "a.test", port: 80)
    let b = HTTPAuthority(scheme: "http", host: "b.test", port: 80)

    func testNewestFirstPerOrigin() {
        var table = IdleTable<Connection>()
        let (a1, a2, b1) = (Connection(), Connection(), Connection())
        table.append(a1, a)
        table.append(b1, b)
        table.append(a2, a)
        XCTAssertEqual(table.count(a), 2)
        XCTAssertTrue(table.popLast(a) === a2)
        XCTAssertTrue(table.popLast(b) === b1)
        XCTAssertNil(table.popLast(b))
        XCTAssertTrue(table.popLast(a) === a1)
        XCTAssertNil(table.popLast(a))
        XCTAssertNil(table.popLast(HTTPAuthority(scheme: "https", host: "a.test", port: 80)), "the scheme is part of the key")
    }

    func testRemoveTakesOnlyThatConnection() {
        var table = IdleTable<Connection>()
        let (a1, a2) = (Connection(), Connection())
        table.append(a1, a)
        table.append(a2, a)
        XCTAssertTrue(table.remove(a1, a))
        XCTAssertFalse(table.remove(a1, a), "already gone")
        XCTAssertFalse(table.remove(a2, b), "not idle for that origin")
        XCTAssertTrue(table.popLast(a) === a2)
        XCTAssertEqual(table.count(a), 0)
    }

    /// Origins visited once leave empty slots behind; they are swept once the table has
    /// doubled, and the origins with idle connections keep them.
    func testEmptySlotsAreSwept() {
        var table = IdleTable<Connection>(sweepThreshold: 4)
        let kept = Connection()
        table.append(kept, a)
        for i in 0..<100 {
            let origin = HTTPAuthority(scheme: "http", host: "h\(i).test", port: 80)
            table.append(Connection(), origin)
            _ = table.popLast(origin)
            XCTAssertLessThanOrEqual(table.originCount, 8, "after \(i) origins")
        }
        XCTAssertEqual(table.count(a), 1)
        XCTAssertTrue(table.popLast(a) === kept)
    }

    /// Many origins each with an idle connection: no sweep can shrink the table, and the
    /// sweeps grow further apart rather than running for every new origin.
    func testSweepsThinOutWhenNothingCanGo() {
        var table = IdleTable<Connection>(sweepThreshold: 4)
        var all: [Connection] = []
        for i in 0..<1000 {
            let c = Connection()
            all.append(c)
            table.append(c, HTTPAuthority(scheme: "http", host: "h\(i).test", port: 80))
        }
        XCTAssertEqual(table.originCount, 1000)
        // At 4, 8, 16, … 512 origins: doubling apart, not one per origin.
        XCTAssertEqual(table.sweeps, 8)
        for i in [0, 499, 999] {
            XCTAssertTrue(table.popLast(HTTPAuthority(scheme: "http", host: "h\(i).test", port: 80)) === all[i])
        }
        let rest = table.removeAll()
        XCTAssertEqual(rest.count, 997)
        XCTAssertEqual(table.originCount, 0)
        // Usable again: nothing left of the old slots (the last one used among them).
        XCTAssertNil(table.popLast(HTTPAuthority(scheme: "http", host: "h999.test", port: 80)))
        let again = Connection()
        table.append(again, a)
        XCTAssertTrue(table.popLast(a) === again)
    }
}
