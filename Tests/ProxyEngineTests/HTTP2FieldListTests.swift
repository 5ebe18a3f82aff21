import CNghttp2
import HTTP1
import XCTest
@testable import ProxyEngine

/// The header blocks handed to nghttp2: names lower-cased, the connection-specific fields
/// left out whatever their case, values as they came, and the list pointing at them.
final class HTTP2FieldListTests: XCTestCase {
    private func pairs(_ list: inout HTTP2FieldList) -> [[String]] {
        list.withList { nv, count in
            (0..<count).map { i in
                [String(decoding: UnsafeBufferPointer(start: nv[i].name, count: nv[i].namelen), as: UTF8.self),
                 String(decoding: UnsafeBufferPointer(start: nv[i].value, count: nv[i].valuelen), as: UTF8.self)]
            }
        } ?? [["no list"]]
    }

    func testNamesAreLowerCasedAndConnectionSpecificFieldsLeftOut() {
        var list = HTTP2FieldList(capacity: 1)
        list.append(name: ":status", value: "200")
        let headers: HTTPHeaders = [("Content-Type", "Application/JSON"), ("Transfer-Encoding", "chunked"),
                                    ("CONNECTION", "close"), ("Keep-Alive", "timeout=5"), ("Proxy-Connection", "x"),
                                    ("Upgrade", "h2c"), ("TE", "trailers"), ("X-Ünïcode-Value", "ünï"),
                                    ("Host", "a.local"), ("teapot", "1"), ("connections", "2")]
        list.append(headers)
        XCTAssertEqual(pairs(&list), [[":status", "200"], ["content-type", "Application/JSON"],
                                      ["x-Ünïcode-value", "ünï"], ["host", "a.local"], ["teapot", "1"],
                                      ["connections", "2"]])
        XCTAssertEqual(list.count, 6)
    }

    func testAFieldCanBeDroppedByName() {
        var list = HTTP2FieldList()
        list.append(HTTPHeaders([("HOST", "a.local"), ("Accept", "*/*"), ("hosts", "b")]))
        XCTAssertEqual(pairs(&list), [["host", "a.local"], ["accept", "*/*"], ["hosts", "b"]])
        var dropped = HTTP2FieldList()
        dropped.append(HTTPHeaders([("HOST", "a.local"), ("Accept", "*/*"), ("hosts", "b")]), dropping: "host")
        XCTAssertEqual(pairs(&dropped), [["accept", "*/*"], ["hosts", "b"]])
    }

    func testAnEmptyListAndEmptyValues() {
        var empty = HTTP2FieldList()
        XCTAssertEqual(pairs(&empty), [])
        var blank = HTTP2FieldList()
        blank.append(name: "x-empty", value: "")
        blank.append(HTTPHeaders([("", "")]))
        XCTAssertEqual(pairs(&blank), [["x-empty", ""], ["", ""]])
    }

    func testConnectionSpecificNamesInAnyCase() {
        for name in ["te", "TE", "Upgrade", "connection", "Keep-Alive", "PROXY-CONNECTION", "transfer-encoding"] {
            XCTAssertTrue(HTTP2FieldList.isConnectionSpecific(name), name)
        }
        for name in ["t", "tea", "upgrades", "content-length", "keep-alive2", "transfer-encodinG2", ""] {
            XCTAssertFalse(HTTP2FieldList.isConnectionSpecific(name), name)
        }
    }
}
