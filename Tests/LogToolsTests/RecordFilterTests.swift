import ResponseSerialization
import XCTest
@testable import LogTools

final class RecordFilterTests: XCTestCase {
    private let json = Fixture.http(1, url: "http://API.Local:8080/v1/items/1?x=1")
    private let notFound = Fixture.http(2, method: "POST", url: "https://shop.example.com/cart/add", status: 404,
                                        mimeType: "application/problem+json")
    private let serverError = Fixture.http(3, url: "http://api.local/v2/health", status: 503,
                                           mimeType: "text/html; charset=utf-8", serializer: "string",
                                           result: #"{"success":"down"}"#)
    private let refused = Fixture.http(4, url: "http://down.local/", status: nil, serializer: "json",
                                       result: #"{"failure":{"error":"upstreamConnectFailed","message":"connection refused"}}"#,
                                       error: Fixture.connectFailed)
    private let unparsable = Fixture.http(5, url: "http://api.local/v1/broken", status: 200,
                                          result: #"{"failure":{"error":"responseSerializationFailed","reason":"jsonSerializationFailed","message":"bad"}}"#)
    private let redirect = Fixture.http(6, url: "http://api.local/old", status: 301, mimeType: "text/plain",
                                        serializer: "string", result: #"{"success":""}"#)
    private let tunnel = Fixture.tunnel(7)
    private let loss = Fixture.loss(3)

    private var all: [String] { [json, notFound, serverError, refused, unparsable, redirect, tunnel, loss] }

    /// Ids (record numbers; 0 for the loss record) kept by `words`.
    private func kept(_ words: [String]) throws -> [Int] {
        let filter = try Query.parse(words)
        return all.filter { filter.matches(line: Array($0.utf8)) }.map { Fixture.number(ofLine: Array($0.utf8)) ?? 0 }
    }

    func testNoWordsKeepEverything() throws {
        XCTAssertEqual(try kept([]), [1, 2, 3, 4, 5, 6, 7, 0])
        XCTAssertTrue(try Query.parse([]).isEmpty)
    }

    func testHostGlobIsCaseInsensitiveAndIgnoresThePortUnlessGiven() throws {
        XCTAssertEqual(try kept(["host=api.local"]), [1, 3, 5, 6])
        XCTAssertEqual(try kept(["host=*.example.com"]), [2])
        XCTAssertEqual(try kept(["host=api.local:8080"]), [1])
        XCTAssertEqual(try kept(["host=api.github.com"]), [7], "a tunnel's target host")
        XCTAssertEqual(try kept(["host=*.com:443"]), [7])
        let literal = Fixture.http(9, url: "http://[::1]:8080/x")
        XCTAssertTrue(try Query.parse(["host=::1"]).matches(line: Array(literal.utf8)))
        XCTAssertTrue(try Query.parse(["host=[::1]:8080"]).matches(line: Array(literal.utf8)))
        XCTAssertFalse(try Query.parse(["host=[::1]:80"]).matches(line: Array(literal.utf8)))
    }

    func testPathGlobMatchesThePathWithoutTheQuery() throws {
        XCTAssertEqual(try kept(["path=/v1/*"]), [1, 5])
        XCTAssertEqual(try kept(["path=/v1/items/1"]), [1])
        XCTAssertEqual(try kept(["path=*/add"]), [2])
        XCTAssertEqual(try kept(["path=/"]), [4])
    }

    func testStatusAcceptsCodesClassesAndRanges() throws {
        XCTAssertEqual(try kept(["status=404"]), [2])
        XCTAssertEqual(try kept(["status=4xx"]), [2])
        XCTAssertEqual(try kept(["status=5XX"]), [3])
        XCTAssertEqual(try kept(["status=200-299"]), [1, 5, 7])
        XCTAssertEqual(try kept(["status=301|404"]), [2, 6], "the older filters' list form keeps its meaning")
        XCTAssertEqual(try kept(["status=301|status=404"]), [2, 6], "`|` is or, even without spaces")
        XCTAssertEqual(try kept(["method=GET|post"]), try kept(["method=GET,POST"]))
        XCTAssertEqual(try kept(["status=301|kind=tunnel"]), try kept(["status=301 or kind=tunnel"]))
        XCTAssertEqual(try kept(["status=3xx,5xx"]), [3, 6])
    }

    func testMethodIsCaseInsensitiveAndTunnelsAreConnect() throws {
        XCTAssertEqual(try kept(["method=POST"]), [2])
        XCTAssertEqual(try kept(["method=post"]), [2])
        XCTAssertEqual(try kept(["method=CONNECT"]), [7])
    }

    func testTypeMatchesSerializerNamesMimeSubtypesSuffixesAndFullTypes() throws {
        XCTAssertEqual(try kept(["type=json"]), [1, 2, 4, 5], "json serializer or a json / +json response")
        XCTAssertEqual(try kept(["type=string"]), [3, 6])
        XCTAssertEqual(try kept(["type=html"]), [3])
        XCTAssertEqual(try kept(["type=text/*"]), [3, 6])
        XCTAssertEqual(try kept(["type=application/problem+json"]), [2])
        XCTAssertEqual(try kept(["type=problem+json"]), [2])
    }

    func testErrorKeepsTransportErrorsFailedResultsAndLosses() throws {
        XCTAssertEqual(try kept(["error"]), [4, 5, 0])
        let brokenTunnel = Fixture.tunnel(8, error: #"{"code":"upstreamReset","message":"reset"}"#, closedBy: "error")
        XCTAssertTrue(try Query.parse(["error"]).matches(line: Array(brokenTunnel.utf8)))
    }

    func testDifferentWordsMustAllMatchAndRepeatedWordsAreAlternatives() throws {
        XCTAssertEqual(try kept(["host=api.local", "status=5xx"]), [3])
        XCTAssertEqual(try kept(["host=api.local", "error"]), [5])
        XCTAssertEqual(try kept(["status=404", "status=503"]), [2, 3])
        XCTAssertEqual(try kept(["path=/v1/*", "type=json", "status=2xx"]), [1, 5])
        XCTAssertEqual(try kept(["method=GET", "host=shop.example.com"]), [])
    }

    /// The older filter's error cases, now reported by the query parser with their column.
    func testUnknownAndMalformedWordsAreRejectedWithTheWordNamed() {
        func message(_ words: [String]) -> String? {
            do {
                _ = try Query.parse(words)
                return nil
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(message(["colour=red"])?.hasPrefix("query:1:1: unknown field 'colour' in 'colour=red'; expected one of id, kind, method"), true)
        XCTAssertEqual(message(["status=4x"]), "query:1:8: expected a status such as 404, 4xx or 200-299, found '4x'")
        XCTAssertEqual(message(["status=299-200"]), "query:1:8: expected a status such as 404, 4xx or 200-299, found '299-200'")
        XCTAssertEqual(message(["status=4xx,5x"]), "query:1:12: expected a status such as 404, 4xx or 200-299, found '5x'")
        XCTAssertEqual(message(["host="]), "query:1:6: expected a value after '='")
        XCTAssertEqual(message(["method=G;T"]), "query:1:8: expected a method name such as GET, found 'G;T'")
        XCTAssertNil(message(["host=a", "status=2xx"]))
    }

    func testUnreadableLinesAreNoRecordsEvenForTheEmptyFilter() throws {
        XCTAssertFalse(Query.all.matches(line: Array("not json".utf8)))
        XCTAssertFalse(Query.all.matches(line: Array("[1,2]".utf8)))
        XCTAssertFalse(Query.all.matches(try JSONParser.parse("42")))
        XCTAssertFalse(try Query.parse(["error"]).matches(line: Array("not json".utf8)))
        XCTAssertTrue(Query.all.matches(line: Array("{}".utf8)))
    }
}
