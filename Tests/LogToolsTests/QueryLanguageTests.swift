import ExchangeLog
import ResponseSerialization
import XCTest
@testable import LogTools

/// Every field, operator, unit and mitmproxy alias of the query language, over a small set of
/// records that differ in one thing each.
final class QueryLanguageTests: XCTestCase {
    private let users = Fixture.http(1, method: "POST", url: "http://api.local:8080/v1/users?page=2",
                                     result: #"{"success":{"user":{"role":"admin","id":9007199254740993},"tags":["a","b"],"error":null}}"#,
                                     requestHeaders: #"[["Host","api.local:8080"],["Content-Type","application/json"],["X-Request-Id","r-77"]]"#,
                                     responseHeaders: #"[["Content-Type","application/json"],["X-Trace","abc-123"]]"#,
                                     start: "2026-12-02T10:00:00.000000Z", dataSize: 20480)
    private let slow = Fixture.http(2, url: "https://shop.example.com/cart", status: 503, mimeType: "text/html",
                                    serializer: "string", result: #"{"success":"Service down: secret maintenance"}"#,
                                    start: "2026-12-02T11:00:00.000000Z", dataSize: 512)
    private let refused = Fixture.http(3, url: "http://down.local/", status: nil,
                                       result: #"{"failure":{"error":"transportFailed","reason":"upstreamConnectFailed","message":"connection refused"}}"#,
                                       error: Fixture.connectFailed, start: "2026-12-02T12:00:00.000000Z")
    private let tunnel = Fixture.tunnel(4)
    private let socket = Fixture.websocket(5)
    private let loss = Fixture.loss(2)
    private let withBody = QueryLanguageTests.record(6, body: #"{"items":[{"id":41},{"id":42.0}],"note":"Hello World"}"#)

    /// A POST whose request body is a decoded JSON value.
    static func record(_ number: Int, body: String) -> String {
        let plain = Fixture.http(number, method: "PUT", url: "http://api.local/v2/orders", status: 201,
                                 result: #"{"failure":{"error":"responseSerializationFailed","reason":"jsonSerializationFailed","message":"bad"}}"#)
        return plain.replacingOccurrences(of: #""bodySize":0}"#, with: #""bodySize":57,"body":\#(body)}"#)
    }

    private var all: [String] { [users, slow, refused, tunnel, socket, loss, withBody] }

    private func kept(_ text: String, now: Double = 0) throws -> [Int] {
        let query = try Query.parse(text, now: now)
        return all.filter { query.matches(line: Array($0.utf8)) }.map { Fixture.number(ofLine: Array($0.utf8)) ?? 0 }
    }

    func testFixturesAreWhatTheTestsAssume() throws {
        for line in all { XCTAssertNotNil(try? JSONParser.parse(line), line) }
        XCTAssertTrue(withBody.contains(#""body":{"items""#))
    }

    func testIdentityFields() throws {
        XCTAssertEqual(try kept("id=0000018c2b1f4a1e-000002"), [2])
        XCTAssertEqual(try kept("id=*-00000?"), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(try kept("id>0000018c2b1f4a1e-000004"), [5, 6])
        XCTAssertEqual(try kept("kind=tunnel"), [4])
        XCTAssertEqual(try kept("kind=loss"), [0])
        XCTAssertEqual(try kept("kind=websocket,tunnel"), [4, 5])
        XCTAssertEqual(try kept("kind=wsMessage"), [], "a kind the language knows, any case")
        XCTAssertEqual(try kept("kind=WSMESSAGE,tunnel"), [4])
        let message = #"{"id":"0000018c2b1f4a1e-000009","kind":"wsMessage","connection":"0000018c2b1f4a1e-000005","direction":"client","opcode":"text","size":2,"time":"2026-12-02T10:00:00.000000Z","result":{"success":"hi"}}"#
        XCTAssertTrue(try Query.parse("kind=wsMessage", now: 0).matches(line: Array(message.utf8)))
        XCTAssertEqual(try kept("kind=http"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("rule=default"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("client=127.0.0.1:53500"), [4])
        XCTAssertEqual(try kept("client~53(500|422)"), [1, 2, 3, 4, 6])
        XCTAssertEqual(try kept("upstream=127.0.0.1:*"), [1, 2, 3, 6])
    }

    func testEqualsWithAWildcardIsAGlobForEveryTextField() throws {
        XCTAssertEqual(try kept("method=P*"), [1, 6])
        XCTAssertEqual(try kept("method=p?st"), [1], "any case")
        XCTAssertEqual(try kept("method=CONN*"), [4])
        XCTAssertEqual(try kept("method=G*,PUT"), [2, 3, 5, 6])
        XCTAssertEqual(try kept("kind=*"), [1, 2, 3, 4, 5, 0, 6])
        XCTAssertEqual(try kept("kind=t*"), [4])
        XCTAssertEqual(try kept("kind=web*,loss"), [5, 0])
        XCTAssertEqual(try kept("type=str*"), [2], "the serializer")
        XCTAssertEqual(try kept("type=text/*"), [2])
        XCTAssertEqual(try kept("type=*htm*"), [2], "the subtype")
        XCTAssertEqual(try kept("rule=def*"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("method!=P*"), [2, 3, 4, 5, 0])
        XCTAssertNotNil(error("method=\"P*\""), "quoted: no glob, and no method name")
        XCTAssertEqual(error("status=5*")?.column, 8, "numeric fields refuse a glob")
        XCTAssertEqual(error("duration>=1*")?.column, 11)
        XCTAssertEqual(error("method=G*,")?.column, 11)
    }

    func testRequestFields() throws {
        XCTAssertEqual(try kept("method=POST"), [1])
        XCTAssertEqual(try kept("method=post,put"), [1, 6])
        XCTAssertEqual(try kept("method=CONNECT"), [4])
        XCTAssertEqual(try kept("method~^p"), [1, 6])
        XCTAssertEqual(try kept("url=https://*"), [2])
        XCTAssertEqual(try kept("url~/V1/"), [1], "regexes are case-insensitive")
        XCTAssertEqual(try kept("host=*.example.com"), [2])
        XCTAssertEqual(try kept("host=API.LOCAL"), [1, 6])
        XCTAssertEqual(try kept("host=api.local:8080"), [1])
        XCTAssertEqual(try kept("host=api.github.com"), [4])
        XCTAssertEqual(try kept("path=/v1/*"), [1])
        XCTAssertEqual(try kept("path=/"), [3])
        XCTAssertEqual(try kept("query=page=2"), [1])
        XCTAssertEqual(try kept("query"), [1], "bare: the URL has a query")
        XCTAssertEqual(try kept("req.header.x-request-id=r-77"), [1])
        XCTAssertEqual(try kept("req.header.X-Request-Id"), [1], "header names ignore case")
        XCTAssertEqual(try kept("req.header.upgrade=websocket"), [5])
        XCTAssertEqual(try kept("res.header.x-trace~^ABC"), [1])
        XCTAssertEqual(try kept("res.header.content-type=text/*"), [2])
    }

    func testResponseFields() throws {
        XCTAssertEqual(try kept("status=503"), [2])
        XCTAssertEqual(try kept("status=5xx"), [2])
        XCTAssertEqual(try kept("status=200-299"), [1, 4, 6])
        XCTAssertEqual(try kept("status>=500"), [2])
        XCTAssertEqual(try kept("status<200"), [5])
        XCTAssertEqual(try kept("status!=200"), [2, 3, 5, 0, 6], "!= keeps records without a status")
        XCTAssertEqual(try kept("type=string"), [2])
        XCTAssertEqual(try kept("type=html"), [2])
        XCTAssertEqual(try kept("type~^str"), [2])
        XCTAssertEqual(try kept("mime=application/json"), [1, 6])
        XCTAssertEqual(try kept("mime=TEXT/*"), [2])
        XCTAssertEqual(try kept("error=upstreamConnectFailed"), [3])
        XCTAssertEqual(try kept("error"), [3, 0, 6], "bare error: transport error, failed result or loss")
        XCTAssertEqual(try kept("failure=upstreamConnectFailed"), [3])
        XCTAssertEqual(try kept("failure=json*"), [6])
        XCTAssertEqual(try kept("failure"), [3, 6])
    }

    func testUnitsOfDurationsAndSizes() throws {
        // Fixture durations: 0.0021 s (http), 1.523 s (tunnel), 2.0 s (websocket).
        XCTAssertEqual(try kept("duration>250ms"), [4, 5])
        XCTAssertEqual(try kept("duration>=1.523s"), [4, 5])
        XCTAssertEqual(try kept("duration<2100us"), [])
        XCTAssertEqual(try kept("duration<=2100us"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("duration>0.03m"), [5])
        XCTAssertEqual(try kept("duration<1h"), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(try kept("duration=2"), [5], "a bare number is seconds")
        XCTAssertEqual(try kept("latency=1.21ms"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("wait>1ms"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("size>=10KB"), [1, 4, 5])
        XCTAssertEqual(try kept("size=20KiB"), [1])
        XCTAssertEqual(try kept("size<1k"), [2])
        XCTAssertEqual(try kept("size>30KB"), [4, 5], "tunnels: bytes from upstream")
        XCTAssertEqual(try kept("reqsize>56B"), [4, 5, 6])
        XCTAssertEqual(try kept("reqsize=57"), [6])
        // Every unit: ns, us / µs, ms, s, m / min, h, d; B, KB, MB, GB (1024-based).
        XCTAssertEqual(try kept("duration<=2100000ns"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("duration<2100000ns"), [])
        XCTAssertEqual(try kept("duration<=2100µs"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("duration<2100µs"), [])
        XCTAssertEqual(try kept("duration>0.025min"), [4, 5], "1.5 s")
        XCTAssertEqual(try kept("duration>0.00002d"), [5], "1.728 s")
        XCTAssertEqual(try kept("duration<1d"), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(try kept("size<0.0195MB"), [2, 6], "20447.232 bytes: not the 20480 of record 1")
        XCTAssertEqual(try kept("size<0.02MB"), [1, 2, 6], "20971.52 bytes")
        XCTAssertEqual(try kept("size>=1GB"), [])
        func bound(_ text: String) throws -> ExactNumber? {
            guard case .compare(_, _, .number(let n)) = try Query.parse(text).expression else { return nil }
            return n
        }
        XCTAssertEqual(try bound("duration>1ns"), ExactNumber("0.000000001"))
        XCTAssertEqual(try bound("duration>3µs"), ExactNumber("0.000003"))
        XCTAssertEqual(try bound("duration>3us"), ExactNumber("0.000003"))
        XCTAssertEqual(try bound("duration>2min"), ExactNumber(120))
        XCTAssertEqual(try bound("duration>1.5d"), ExactNumber(129600))
        XCTAssertEqual(try bound("size>1.5MB"), ExactNumber(1572864))
        XCTAssertEqual(try bound("size>2GB"), ExactNumber(2147483648))
        XCTAssertEqual(try bound("size>1gib"), ExactNumber(1073741824))
        // A written null falls through to the next source, as a missing member does.
        let nullSize = slow.replacingOccurrences(of: #""data":{"size":512"#, with: #""data":{"size":null"#)
        XCTAssertNotEqual(nullSize, slow)
        XCTAssertTrue(try Query.parse("size=312").matches(line: Array(nullSize.utf8)), "data.size null: response.bodySize")
        XCTAssertFalse(try Query.parse("size=312").matches(line: Array(slow.utf8)))
    }

    func testTimeAbsoluteAndRelative() throws {
        XCTAssertEqual(try kept("time>=2026-12-02T11:00:00Z"), [2, 3])
        XCTAssertEqual(try kept("time<2026-12-02T12:00:00+01:00"), [1, 4, 5, 0, 6])
        XCTAssertEqual(try kept("time>2026-12-02T10:30:00Z time<2026-12-02T11:30:00Z"), [2])
        XCTAssertEqual(try kept("time>=2026-12-03"), [])
        let elevenThirty = RFC3339Reader.seconds("2026-12-02T11:30:00Z")!
        XCTAssertEqual(try kept("time>=-1h", now: elevenThirty), [2, 3])
        XCTAssertEqual(try kept("time>=-90m time<-29m", now: elevenThirty), [1, 2, 4, 5, 0, 6])
    }

    func testJSONPointersIntoResponseAndRequestValues() throws {
        XCTAssertEqual(try kept("json:/user/role=admin"), [1])
        XCTAssertEqual(try kept("json:/user/role=adm*"), [1])
        XCTAssertEqual(try kept("json:/user/role ~^AD"), [1], "after a pointer the regex operator follows a space")
        XCTAssertEqual(try kept("json:/user/role ~^AD or json:/user ~zzz"), [1])
        XCTAssertEqual(try kept("json:/user/id=9007199254740993"), [1], "numbers compare exactly, beyond 2^53")
        XCTAssertEqual(try kept("json:/user/id>9007199254740992"), [1])
        XCTAssertEqual(try kept("json:/user/id<9007199254740993"), [])
        XCTAssertEqual(try kept("json:/tags/1=b"), [1])
        XCTAssertEqual(try kept("json:/error"), [], "null is no value")
        XCTAssertEqual(try kept("json:/error=null"), [1])
        XCTAssertEqual(try kept("json:/user"), [1])
        XCTAssertEqual(try kept("reqjson:/items/1/id>=42"), [6], "42.0 >= 42")
        XCTAssertEqual(try kept("reqjson:/items/1/id=42"), [6])
        XCTAssertEqual(try kept("reqjson:/items/0/id>=42"), [])
        XCTAssertEqual(try kept("reqjson:/note=\"Hello World\""), [6])
        XCTAssertEqual(try kept("json:/items"), [], "the response value, not the request body")
        XCTAssertEqual(try kept("json:/user/id=\"9007199254740993\""), [], "quoted: a string, never the number")
        XCTAssertEqual(try kept("json:/user/id!=\"9007199254740993\""), [1, 2, 3, 4, 5, 0, 6])
        XCTAssertEqual(try kept("json:/tags/1=\"b\""), [1])
        XCTAssertEqual(try kept("json:/tags=[\"a\",\"b\"]"), [1], "unquoted: compared as compact JSON text")
        XCTAssertEqual(try kept("json:/tags=\"[\\\"a\\\",\\\"b\\\"]\""), [], "quoted: only a string with that text")
    }

    func testBareWordsAndPhrasesSearchURLHeadersAndBodies() throws {
        XCTAssertEqual(try kept("SECRET"), [2], "the response value")
        XCTAssertEqual(try kept("\"hello world\""), [6], "the request body")
        XCTAssertEqual(try kept("abc-123"), [1], "a response header value")
        XCTAssertEqual(try kept("shop.example"), [2], "the URL")
        XCTAssertEqual(try kept("github"), [4], "a tunnel's target")
        XCTAssertEqual(try kept("\"failure\""), [], "quoted, a field name is text")
        XCTAssertEqual(try kept("\"role\""), [1], "keys of a decoded value are text too")
        XCTAssertEqual(try kept("nowhere-to-be-found"), [])
        // Non-ASCII needles: Unicode case folding; ASCII needles: ASCII letters only.
        let greeting = Array(QueryLanguageTests.record(7, body: #"{"greeting":"Grüße aus der Straße","school":"école"}"#).utf8)
        for (text, found) in [("GRÜSSE", true), ("grüße", true), ("ÉCOLE", true), ("\"AUS DER STRASSE\"", false),
                              ("strasse", false), ("Grüsse", true), ("GRÜßE", true), ("école", true), ("ecole", false)] {
            let query = try Query.parse(text)
            XCTAssertEqual(query.matches(line: greeting), found, text)
            if found { XCTAssertTrue(query.prefilter.mayMatch(greeting), text) }
        }
    }

    func testOperatorsPrecedenceAndParentheses() throws {
        XCTAssertEqual(try kept("kind=http status=503"), [2])
        XCTAssertEqual(try kept("kind=http and status=503"), [2])
        XCTAssertEqual(try kept("kind=http & status=503"), [2])
        XCTAssertEqual(try kept("status=503 or kind=tunnel"), [2, 4])
        XCTAssertEqual(try kept("status=503 | kind=tunnel"), [2, 4])
        XCTAssertEqual(try kept("not kind=http"), [4, 5, 0])
        XCTAssertEqual(try kept("!kind=http"), [4, 5, 0])
        XCTAssertEqual(try kept("NOT kind=http AND NOT kind=loss"), [4, 5])
        // and binds tighter than or; not tighter than and.
        XCTAssertEqual(try kept("kind=tunnel or kind=http status=503"), [2, 4])
        XCTAssertEqual(try kept("(kind=tunnel or kind=http) status=503"), [2])
        XCTAssertEqual(try kept("not kind=http status=101"), [5])
        XCTAssertEqual(try kept("not (kind=http or kind=loss)"), [4, 5])
        XCTAssertEqual(try kept("((status=503))"), [2])
        XCTAssertEqual(try kept("!(!(status=503))"), [2])
        // Side by side, one field's `=` terms are alternatives (the older filter words); `and` requires both.
        XCTAssertEqual(try kept("status=503 status=201"), [2, 6])
        XCTAssertEqual(try kept("status=503 and status=201"), [])
        XCTAssertEqual(try kept("host=api.local status=201 host=shop.example.com"), [6])
    }

    func testOperatorCharactersEndUnquotedTextWithoutSpaces() throws {
        XCTAssertEqual(try kept("secret|admin"), [1, 2])
        XCTAssertEqual(try kept("secret | admin"), [1, 2])
        XCTAssertEqual(try kept("error&kind=loss"), [0])
        XCTAssertEqual(try kept("status>=500|kind=tunnel"), [2, 4])
        XCTAssertEqual(try kept("host=shop.example.com|host=down.local"), [2, 3])
        XCTAssertEqual(try kept("(secret)|(admin)"), [1, 2])
        XCTAssertEqual(try kept("kind=http&!secret"), [1, 3, 6])
        XCTAssertEqual(try kept("~c 503|~c 201"), [2, 6])
        XCTAssertEqual(try kept("url~(cart|users)"), [1, 2], "inside a value's own parentheses `|` is the regex's")
        XCTAssertEqual(try kept("\"secret|admin\""), [], "quoted, `|` is literal text")
        XCTAssertEqual(try kept("json:/user/role=\"admin|x\""), [])
        XCTAssertEqual(try kept("hello!"), [], "`!` ends nothing inside a word")
    }

    func testParsedShape() throws {
        XCTAssertEqual(try Query.parse("a or b c").expression, .or([.text("a"), .and([.text("b"), .text("c")])]))
        XCTAssertEqual(try Query.parse("not a b").expression, .and([.not(.text("a")), .text("b")]))
        XCTAssertEqual(try Query.parse("").expression, .all)
        XCTAssertTrue(try Query.parse("   ").isEmpty)
        XCTAssertEqual(try Query.parse("status=4xx,5xx").expression,
                       .compare(.status, .equal, .statuses([StatusPattern("4xx")!, StatusPattern("5xx")!])))
        XCTAssertEqual(try Query.parse("duration>250ms").expression, .compare(.duration, .greater, .number(ExactNumber("0.25")!)))
        XCTAssertEqual(try Query.parse("size>=10KB").expression, .compare(.size, .greaterOrEqual, .number(ExactNumber(10240))))
        XCTAssertEqual(try Query.parse("~c 404").expression, .compare(.status, .equal, .statuses([StatusPattern("404")!])))
    }

    func testMitmproxyFilters() throws {
        XCTAssertEqual(try kept("~c 503"), [2])
        XCTAssertEqual(try kept("~c 5xx"), [2])
        XCTAssertEqual(try kept("~c 200-299"), try kept("status=200-299"))
        XCTAssertEqual(try kept("~d example.com"), [2])
        XCTAssertEqual(try kept("~d ^API"), [1, 4, 6])
        XCTAssertEqual(try kept("~b secret"), [2])
        XCTAssertEqual(try kept("~bq hello"), [6])
        XCTAssertEqual(try kept("~bs hello"), [])
        XCTAssertEqual(try kept("~bs \"service down\""), [2])
        XCTAssertEqual(try kept("~m POST"), [1])
        XCTAssertEqual(try kept("~u /v1/"), [1])
        XCTAssertEqual(try kept("~h x-trace"), [1])
        XCTAssertEqual(try kept("~h \"^x-trace: abc\""), [1])
        XCTAssertEqual(try kept("~hq x-request-id"), [1])
        XCTAssertEqual(try kept("~hs x-request-id"), [])
        XCTAssertEqual(try kept("~t json"), [1, 6])
        XCTAssertEqual(try kept("~tq json"), [1])
        XCTAssertEqual(try kept("~ts html"), [2])
        XCTAssertEqual(try kept("~e"), [3, 0, 6])
        XCTAssertEqual(try kept("~s"), [1, 2, 5, 6])
        XCTAssertEqual(try kept("~q"), [3])
        XCTAssertEqual(try kept("~http"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("~tcp"), [4])
        XCTAssertEqual(try kept("~websocket"), [5])
        XCTAssertEqual(try kept("~src 53500"), [4])
        XCTAssertEqual(try kept("~dst 8080"), [1, 2, 3, 6])
        XCTAssertEqual(try kept("~all"), [1, 2, 3, 4, 5, 0, 6])
        XCTAssertEqual(try kept("~c 503 | ~tcp"), [2, 4])
        XCTAssertEqual(try kept("!~s ~http"), [3])
        XCTAssertEqual(try kept("(~d example & ~c 503)"), [2])
        let css = Fixture.http(8, responseHeaders: #"[["Content-Type","text/css"]]"#)
        XCTAssertTrue(try Query.parse("~a").matches(line: Array(css.utf8)))
        XCTAssertEqual(try kept("~a"), [])
    }

    func testExactNumbers() {
        func n(_ s: String) -> ExactNumber { ExactNumber(s)! }
        XCTAssertEqual(n("42"), n("42.0"))
        XCTAssertEqual(n("4.2e1"), n("42"))
        XCTAssertEqual(n("0"), n("-0.0"))
        XCTAssertLessThan(n("-1"), n("0"))
        XCTAssertLessThan(n("-2"), n("-1.5"))
        XCTAssertLessThan(n("0.001"), n("0.01"))
        XCTAssertLessThan(n("9007199254740992"), n("9007199254740993"))
        XCTAssertLessThan(n("1e-7"), n("0.0000002"))
        XCTAssertEqual(n("250").scaled(byPowerOfTen: -3), n("0.25"))
        XCTAssertEqual(n("1.5").multiplied(by: 60), n("90"))
        XCTAssertEqual(n("0.5").multiplied(by: 1024), n("512"))
        XCTAssertNil(ExactNumber("1.2.3"))
        XCTAssertNil(ExactNumber("abc"))
        XCTAssertNil(ExactNumber("1e"))
    }

    // MARK: Errors

    private func error(_ text: String) -> QuerySyntaxError? {
        do {
            _ = try Query.parse(text)
            return nil
        } catch {
            return error
        }
    }

    func testErrorsNameTheColumnAndWhatWasExpected() throws {
        XCTAssertEqual(error("status>=")?.description, "query:1:9: expected a value after '>='")
        XCTAssertEqual(error("kind=http duration>")?.description, "query:1:20: expected a value after '>'")
        XCTAssertEqual(error("colour=red")?.column, 1)
        XCTAssertEqual(error("colour=red")?.message.hasPrefix("unknown field 'colour'"), true)
        // Spaces around an operator: an error at the operator, not the bare field and two
        // text searches (quoted, such a word is text).
        XCTAssertEqual(error("status >= 500")?.column, 8)
        XCTAssertEqual(error("status >= 500")?.message.hasPrefix("'>=' starts with an operator but has no field before it"), true)
        XCTAssertEqual(error("status =500")?.column, 8)
        XCTAssertEqual(error("kind=http !=404")?.column, 12, "after the negation")
        XCTAssertNil(error("\"<html\""))
        XCTAssertNil(error("!status=404"))
        XCTAssertEqual(error("a and")?.description, "query:1:6: expected a term after 'and'")
        XCTAssertEqual(error("or a")?.description, "query:1:1: expected a term, found 'or'")
        XCTAssertEqual(error("(a")?.description, "query:1:3: expected ')' to close '(' at column 1")
        XCTAssertEqual(error("a)")?.description, "query:1:2: unexpected ')' with no '(' before it")
        XCTAssertEqual(error("()")?.description, "query:1:2: expected a term after '('")
        XCTAssertEqual(error("not")?.description, "query:1:4: expected a term after 'not'")
        XCTAssertEqual(error("\"abc")?.description, "query:1:5: expected '\"' to close the quoted string at column 1")
        XCTAssertEqual(error("duration>fast")?.description,
                       "query:1:10: expected a duration such as 250ms, 1.5s or 2m after '>', found 'fast'")
        XCTAssertEqual(error("size>=10XB")?.column, 7)
        XCTAssertEqual(error("time>=yesterday")?.column, 7)
        XCTAssertEqual(error("time>=--1h")?.column, 7, "only -DURATION")
        XCTAssertEqual(error("time<+1h")?.column, 6)
        XCTAssertEqual(error("time<-+1h")?.column, 6)
        XCTAssertEqual(error("time<-")?.column, 6)
        XCTAssertNil(error("time<-.5h"))
        XCTAssertEqual(error("time>=2026-02-31")?.column, 7, "no such day")
        XCTAssertEqual(error("time>=2026-02-29")?.column, 7, "2026 is no leap year")
        XCTAssertEqual(error("time>=2026-04-31T10:00:00Z")?.column, 7)
        XCTAssertNil(error("time>=2028-02-29"), "2028 is one")
        XCTAssertNil(error("time>=2000-02-29"))
        XCTAssertEqual(error("time>=1900-02-29")?.column, 7)
        XCTAssertEqual(error("status>=abc")?.column, 9)
        XCTAssertEqual(error("kind=tcp")?.description, "query:1:6: expected a kind (http, tunnel, websocket, wsMessage, loss), found 'tcp'")
        XCTAssertEqual(error("url~(")?.column, 5)
        XCTAssertEqual(error("json:abc=1")?.column, 6)
        XCTAssertEqual(try Query.parse("json:/a~1b=1").expression,
                       .compare(.responseJSON(JSONPointer(tokens: ["a/b"])), .equal, .number(ExactNumber(1))))
        XCTAssertEqual(try Query.parse("json:/a~0b~1").expression, .exists(.responseJSON(JSONPointer(tokens: ["a~b/"]))))
        XCTAssertEqual(error("json:/price~2x")?.column, 12, "a ~ in a pointer is an escape or an error")
        XCTAssertEqual(error("json:/price~2x")?.message.hasPrefix("expected a JSON Pointer"), true)
        XCTAssertEqual(error("reqjson:/a/b~=1")?.column, 13)
        XCTAssertEqual(error("json:/price~")?.column, 12)
        XCTAssertEqual(try Query.parse("json:/price ~1").expression, .compare(.responseJSON(JSONPointer(tokens: ["price"])), .regex, .regex("1")))
        XCTAssertEqual(error("~x")?.message.hasPrefix("unknown filter '~x'"), true)
        XCTAssertEqual(error("~c")?.description, "query:1:3: expected a status code after '~c'")
        XCTAssertEqual(error("~c abc")?.column, 4)
        XCTAssertEqual(error("~c 99999")?.column, 4, "~c reads the same status pattern as status=")
        XCTAssertEqual(error("status=99999")?.column, 8)
        XCTAssertEqual(error("~c 99")?.column, 4)
        XCTAssertEqual(error("~c 1000")?.column, 4)
        XCTAssertEqual(error("~b")?.description, "query:1:3: expected a regular expression after '~b'")
        XCTAssertEqual(error("req.header.=x")?.column, 12)
        XCTAssertEqual(error("\"\"")?.column, 1)
        XCTAssertEqual(error("~")?.column, 1)
    }

    /// Malformed expressions made by cutting, doubling and splicing valid ones: none may crash,
    /// every one must be refused with a column inside the text (or just past its end).
    func testFiftyGeneratedMalformedExpressionsAreRefusedWithAColumn() {
        let valid = ["status>=500", "host=*.example.com", "(kind=http or kind=tunnel)", "json:/user/role=admin",
                     "duration>250ms", "~c 404", "not error", "size>=10KB", "\"quoted phrase\"", "time>=-1h",
                     "reqjson:/items/0/id>=42", "res.header.x-trace~abc"]
        let breakers: [(String) -> String] = [
            { $0 + " and" }, { "or " + $0 }, { "(" + $0 }, { $0 + ")" }, { $0 + " not" },
            { $0 + " x=(" }, { $0 + " |" }, { "& " + $0 },
            { $0 + " bogus=1" }, { $0 + " size>big" }, { $0 + " \"unterminated" }, { $0 + " ~zz" },
            { $0 + " url~[" }, { $0 + " status=abc" }, { $0 + " json:nopointer" }, { $0 + " ()" },
            { $0 + " time<tomorrow" }, { $0 + " duration>=" }, { $0 + " ~c" }, { $0 + " kind=ftp" },
        ]
        // Seeded: the same fifty every run, so a failure can be reproduced.
        var generator = SplitMix64(seed: 0x7A9_5EED)
        var seen = 0
        var attempts = 0
        while seen < 50 && attempts < 1000 {
            attempts += 1
            let base = valid.randomElement(using: &generator)!
            let text = breakers.randomElement(using: &generator)!(base)
            guard let failure = error(text) else { continue }
            seen += 1
            XCTAssertGreaterThanOrEqual(failure.column, 1, text)
            XCTAssertLessThanOrEqual(failure.column, text.count + 1, text)
            XCTAssertTrue(failure.description.hasPrefix("query:1:\(failure.column): "), failure.description)
            XCTAssertFalse(failure.message.isEmpty, text)
        }
        XCTAssertEqual(seen, 50)
        // And every breaker really breaks every valid expression.
        for base in valid {
            for breaker in breakers {
                XCTAssertNotNil(error(breaker(base)), breaker(base))
            }
        }
    }

    func testTheMalformedExpressionGeneratorIsSeeded() {
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42), c = SplitMix64(seed: 43)
        let first = (0..<8).map { _ in a.next() }
        XCTAssertEqual(first, (0..<8).map { _ in b.next() })
        XCTAssertNotEqual(first, (0..<8).map { _ in c.next() })
    }

    /// Nesting is bounded (QueryParser.maxDepth): deep enough for any real query, and a hostile
    /// one gets an error instead of running the stack out.
    func testNestingDeeperThanTheLimitIsAnErrorNotACrash() throws {
        let limit = QueryParser.maxDepth
        let deepest = String(repeating: "(", count: limit) + "status=404" + String(repeating: ")", count: limit)
        XCTAssertTrue(try Query.parse(deepest).matches(line: Array(slow.utf8)) == false)
        XCTAssertNotNil(try Query.parse(String(repeating: "not ", count: limit) + "a"))
        let tooDeep = "(" + deepest + ")"
        XCTAssertEqual(error(tooDeep)?.column, limit + 1)
        XCTAssertEqual(error(tooDeep)?.message, "expected at most \(limit) levels of parentheses and 'not'")
        XCTAssertNotNil(error(String(repeating: "!", count: 100_000) + "a"))
        XCTAssertNotNil(error(String(repeating: "(", count: 100_000)))
        // Long flat chains are loops, not recursion: no limit.
        XCTAssertNotNil(try Query.parse(Array(repeating: "status=404", count: 5000).joined(separator: " or ")))
    }

    /// Random bytes from the language's own alphabet never crash the parser.
    func testRandomTextNeverCrashes() {
        let alphabet = Array("abc=!<>~()|&\" \\/:*?.-0123456789jsonstatus")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let length = Int.random(in: 0...24, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            if let failure = error(text) {
                XCTAssertTrue((1...(text.count + 1)).contains(failure.column), "\(text): \(failure)")
            }
        }
    }
}

/// A seeded generator (SplitMix64): tests that draw random cases draw the same ones every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
