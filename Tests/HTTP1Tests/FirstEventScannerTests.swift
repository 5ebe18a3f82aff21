import HTTP1
import XCTest

final class FirstEventScannerTests: XCTestCase {
    /// Where the first event ends (bytes scanned when found), fed in pieces of `size`.
    func end(_ text: String, size: Int = .max) -> Int? {
        var scanner = FirstEventScanner()
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            let piece = Array(bytes[i..<min(bytes.count, i + min(size, bytes.count))])
            i += piece.count
            if piece.withUnsafeBytes({ scanner.scan($0) }) { return scanner.scanned }
        }
        return nil
    }

    func testTheBlankLineAfterADataFieldEndsTheFirstEvent() {
        let stream = "data: {\"a\":1}\n\ndata: two\n\n"
        for size in [1, 2, 5, 100] { XCTAssertEqual(end(stream, size: size), 15, "size \(size)") }
        XCTAssertEqual(end("event: x\r\ndata\r\n\r\n"), 17, "CRLF (found at its CR), and a bare data field")
        XCTAssertEqual(end("data:x\r\rmore"), 8, "CR alone ends lines too")
    }

    func testCommentsAndBlocksWithoutDataDoNotCount() {
        XCTAssertEqual(end(": keep-alive\n\nretry: 100\n\nid: 1\n\ndata: real\n\n"), 45)
        XCTAssertNil(end("database: no\n\n"), "a field named datab… is not data")
        XCTAssertNil(end("data: not ended\n"))
    }

    func testOnlyAPlainEventStreamIsScanned() {
        func headers(_ fields: [(String, String)]) -> HTTPHeaders {
            var h = HTTPHeaders()
            for (n, v) in fields { h.add(name: n, value: v) }
            return h
        }
        XCTAssertTrue(FirstEventScanner.applies(to: headers([("Content-Type", "text/event-stream")])))
        XCTAssertTrue(FirstEventScanner.applies(to: headers([("content-type", " Text/Event-Stream ; charset=utf-8")])))
        XCTAssertTrue(FirstEventScanner.applies(to: headers([("Content-Type", "text/event-stream"), ("Content-Encoding", "IDENTITY")])))
        XCTAssertFalse(FirstEventScanner.applies(to: headers([("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip")])))
        XCTAssertFalse(FirstEventScanner.applies(to: headers([("Content-Type", "text/event-streams")])))
        XCTAssertFalse(FirstEventScanner.applies(to: headers([("Content-Type", "text/event")])))
        XCTAssertFalse(FirstEventScanner.applies(to: headers([("Content-Type", "application/json")])))
        XCTAssertFalse(FirstEventScanner.applies(to: headers([])))
    }
}
