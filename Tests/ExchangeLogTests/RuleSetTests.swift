import HTTP1
import ResponseSerialization
import XCTest
@testable import ExchangeLog

final class RuleSetTests: XCTestCase {
    private func exchange(method: String = "GET", url: String = "http://api.example.com:8080/repos/a/b?page=2",
                          requestHeaders: [(String, String)] = [], status: Int? = 200,
                          responseHeaders: [(String, String)] = [("Content-Type", "application/json")]) -> CapturedExchange {
        RecordFixture.exchange(method: method, url: url, requestHeaders: requestHeaders, status: status,
                               responseHeaders: responseHeaders)
    }

    private func rule(_ name: String, _ configure: (inout RuleMatch) -> Void) -> Rule {
        var match = RuleMatch()
        configure(&match)
        return Rule(name: name, match: match, serializer: SerializerSpec(kind: .json))
    }

    private func matchName(_ rules: [Rule], _ exchange: CapturedExchange) -> String? {
        RuleSet(rules: rules).match(exchange)?.name
    }

    func testFirstMatchingRuleWins() {
        let rules = [
            rule("other-host") { $0.host = Glob("other.com", caseInsensitive: true) },
            rule("api") { $0.host = Glob("*.example.com", caseInsensitive: true) },
            rule("everything") { _ in },
        ]
        XCTAssertEqual(matchName(rules, exchange()), "api")
        XCTAssertEqual(matchName(Array(rules.reversed()), exchange()), "everything")
        XCTAssertEqual(matchName([rules[0]], exchange()), nil)
    }

    func testHostGlobIgnoresCasePortAndUserInfo() {
        let api = [rule("api") { $0.host = Glob("API.example.*", caseInsensitive: true) }]
        XCTAssertEqual(matchName(api, exchange(url: "http://Api.Example.COM:8080/x")), "api")
        XCTAssertEqual(matchName(api, exchange(url: "http://user:pw@api.example.com/x")), "api")
        XCTAssertNil(matchName(api, exchange(url: "http://www.example.com/x")))
        let v6 = [rule("v6") { $0.host = Glob("::1", caseInsensitive: true) }]
        XCTAssertEqual(matchName(v6, exchange(url: "http://[::1]:8080/")), "v6")
        // Origin-form targets take the host from the Host header.
        XCTAssertEqual(matchName(api, exchange(url: "/x", requestHeaders: [("Host", "api.example.com:80")])), "api")
        // An absolute name (trailing dot) is the same host, as nginx treats it.
        let exact = [rule("exact") { $0.host = Glob("api.github.com", caseInsensitive: true) }]
        XCTAssertEqual(matchName(exact, exchange(url: "http://api.github.com./repos/x")), "exact")
        XCTAssertEqual(matchName(exact, exchange(url: "/x", requestHeaders: [("Host", "api.github.com.:443")])), "exact")
    }

    func testPathGlobIgnoresTheQuery() {
        let repos = [rule("repos") { $0.path = Glob("/repos/*") }]
        XCTAssertEqual(matchName(repos, exchange()), "repos")
        XCTAssertNil(matchName(repos, exchange(url: "http://h/users/a?next=/repos/x")))
        let exact = [rule("exact") { $0.path = Glob("/repos/a/b") }]
        XCTAssertEqual(matchName(exact, exchange()), "exact")
        let root = [rule("root") { $0.path = Glob("/") }]
        XCTAssertEqual(matchName(root, exchange(url: "http://h?x=1")), "root")
        let cased = [rule("cased") { $0.path = Glob("/Repos/*") }]
        XCTAssertNil(matchName(cased, exchange()), "paths are case-sensitive")
    }

    func testMethodList() {
        let writes = [rule("writes") { $0.methods = ["POST", "PUT"] }]
        XCTAssertEqual(matchName(writes, exchange(method: "PUT")), "writes")
        XCTAssertNil(matchName(writes, exchange(method: "GET")))
    }

    func testStatusPatternsNeedAResponse() {
        let errors = [rule("errors") { $0.status = [StatusPattern("4xx")!, StatusPattern("500-503")!] }]
        XCTAssertEqual(matchName(errors, exchange(status: 404)), "errors")
        XCTAssertEqual(matchName(errors, exchange(status: 503)), "errors")
        XCTAssertNil(matchName(errors, exchange(status: 504)))
        XCTAssertNil(matchName(errors, exchange(status: 200)))
        XCTAssertNil(matchName(errors, exchange(status: nil)))
    }

    func testContentTypePatternsUseTheMediaTypeOnly() {
        let json = [rule("json") { $0.contentType = [MediaTypePattern("application/*+json")!, MediaTypePattern("text/json")!] }]
        XCTAssertEqual(matchName(json, exchange(responseHeaders: [("Content-Type", "application/vnd.github+json; charset=utf-8")])), "json")
        XCTAssertEqual(matchName(json, exchange(responseHeaders: [("content-type", "TEXT/JSON")])), "json")
        XCTAssertNil(matchName(json, exchange(responseHeaders: [("Content-Type", "application/json")])))
        XCTAssertNil(matchName(json, exchange(responseHeaders: [])))
        XCTAssertNil(matchName(json, exchange(status: nil)))
        let any = [rule("any") { $0.contentType = [MediaTypePattern("*/*")!] }]
        XCTAssertNil(matchName(any, exchange(responseHeaders: [])), "a missing Content-Type matches nothing")
    }

    func testHeaderPresenceInRequestOrResponse() {
        let traced = [rule("traced") { $0.headers = ["x-trace-id", "X-Region"] }]
        XCTAssertEqual(matchName(traced, exchange(requestHeaders: [("X-Trace-Id", "1")],
                                                  responseHeaders: [("x-region", "eu")])), "traced")
        XCTAssertNil(matchName(traced, exchange(requestHeaders: [("X-Trace-Id", "1")])))
        XCTAssertNil(matchName(traced, exchange(status: nil)))
    }

    func testEveryPresentFieldMustMatch() {
        let rules = [rule("all") {
            $0.host = Glob("api.example.com", caseInsensitive: true)
            $0.path = Glob("/repos/*")
            $0.methods = ["GET"]
            $0.status = [StatusPattern("2xx")!]
            $0.contentType = [MediaTypePattern("application/json")!]
        }]
        XCTAssertEqual(matchName(rules, exchange()), "all")
        XCTAssertNil(matchName(rules, exchange(method: "POST")))
        XCTAssertNil(matchName(rules, exchange(status: 301)))
        XCTAssertNil(matchName(rules, exchange(url: "http://api.example.com/users")))
        XCTAssertNil(matchName(rules, exchange(responseHeaders: [("Content-Type", "text/html")])))
    }

    func testNoMatchIsRecordedAsDefault() throws {
        let processor = RecordFixture.processor(ProcessorSettings(rules: [rule("never") { $0.methods = ["PATCH"] }]))
        let record = try ParsedRecord(processor.record(for: RecordFixture.exchange(body: Array("1".utf8)), id: "x"))
        XCTAssertEqual(record["/rule"], .string("default"))
    }

    func testDefaultSerializerByContentType() {
        let cases: [(String?, SerializerSpec.Kind)] = [
            ("application/json", .json), ("application/json; charset=utf-8", .json), ("Application/JSON", .json),
            ("text/json", .json), ("application/vnd.github+json", .json), ("application/problem+json", .json),
            ("application/x-ndjson", .jsonLines), ("application/jsonl", .jsonLines),
            ("application/x-plist", .propertyList), ("application/x-bplist", .propertyList), ("application/plist", .propertyList),
            ("text/event-stream", .eventStream),
            ("application/msgpack", .msgpack), ("application/x-msgpack", .msgpack), ("Application/MsgPack; x=1", .msgpack),
            ("application/vnd.msgpack", .data),
            ("text/plain", .string), ("text/html; charset=utf-8", .string), ("text/csv", .string),
            ("application/xml", .string), ("text/xml", .string), ("application/atom+xml", .string), ("image/svg+xml", .string),
            ("application/x-www-form-urlencoded", .string), ("application/javascript", .string), ("text/javascript", .string),
            ("application/octet-stream", .data), ("image/png", .data), (nil, .data), ("", .data), ("garbage", .data),
        ]
        for (contentType, expected) in cases {
            XCTAssertEqual(RuleSet.defaultSerializer(contentType: contentType, body: Array("x".utf8)), expected,
                           "\(contentType ?? "nil")")
        }
    }

    func testBinaryPlistMagicWinsOverTheLabel() {
        let body = Array("bplist00\u{1}\u{2}".utf8)
        XCTAssertEqual(RuleSet.defaultSerializer(contentType: "application/octet-stream", body: body), .propertyList)
        XCTAssertEqual(RuleSet.defaultSerializer(contentType: nil, body: body), .propertyList)
        XCTAssertEqual(RuleSet.defaultSerializer(contentType: nil, body: Array("bplist0".utf8)), .data)
    }

    func testContentTypeFieldsOnBytes() {
        let full = ContentTypeFields(" Application/Vnd.API+JSON ;\tq=0.5; CharSet=\"UTF-8\" ; x=y")
        XCTAssertEqual(full.mediaType, "application/vnd.api+json")
        XCTAssertEqual(full.type, "application")
        XCTAssertEqual(full.subtype, "vnd.api+json")
        XCTAssertEqual(full.charsetParameter, "UTF-8")
        XCTAssertEqual(full.charsetName, "utf-8")
        XCTAssertEqual(ContentTypeFields("text/plain; charset=latin1").charsetName, "iso-8859-1")
        XCTAssertEqual(ContentTypeFields("text/plain; charset=x-klingon").charsetName, "x-klingon")
        XCTAssertNil(ContentTypeFields("text/plain; charset=").charsetParameter)
        XCTAssertNil(ContentTypeFields("text/plain; charsets=utf-8").charsetParameter)
        XCTAssertNil(ContentTypeFields(" ; charset=utf-8").mediaType)
        XCTAssertEqual(ContentTypeFields(" ; charset=utf-8").charsetParameter, "utf-8")
        XCTAssertNil(ContentTypeFields(nil).mediaType)
        // Read from a head's bytes (common types become shared literals): the same fields.
        for value in ["application/json", "text/html; charset=utf-8", " Application/JSON ", "image/svg+xml",
                      "application/jsonx", "application/jso", "", "a/b/c; charset=\"x\""] {
            let fromHead = ContentTypeFields(headers: HTTPHeaders([("X-Other", "1"), ("content-type", value), ("Content-Type", "text/plain")]))
            XCTAssertEqual(fromHead, ContentTypeFields(value), value)
            // An optional head's headers (nil: no response) read the same way.
            let headers: HTTPHeaders? = HTTPHeaders([("Content-Type", value)])
            XCTAssertEqual(ContentTypeFields(headers: headers), ContentTypeFields(value), value)
        }
        XCTAssertEqual(ContentTypeFields(headers: nil as HTTPHeaders?), ContentTypeFields(nil))
        XCTAssertNil(ContentTypeFields(headers: HTTPHeaders([("X-Other", "application/json")])).mediaType)
        let noSlash = ContentTypeFields("garbage")
        XCTAssertEqual(noSlash.type, "garbage")
        XCTAssertEqual(noSlash.subtype, "")
        // Agrees with the Foundation-based parsers it replaces.
        for value in ["application/json", "text/html; charset=ISO-8859-1", "a/b/c", "TEXT/X; Charset = utf-8 ", "x/y;charset=\"\""] {
            XCTAssertEqual(ContentTypeFields(value).charsetParameter, Charset.charsetParameter(ofContentType: value), value)
            XCTAssertEqual(ContentTypeFields(value).mediaType,
                           ResponseValidation.responseMIMEType(HTTPResponseHead(status: 200, headers: [("Content-Type", value)])), value)
        }
    }
}
