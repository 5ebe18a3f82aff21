// Measures the log-record path a serialization worker runs for every exchange
// (rule match, decoding, serializer, redaction, record encoding), in µs per record,
// on the two documents `make bench` drives through the proxy. No goal is checked
// here: `make bench` compares whole proxies; this isolates the worker's share, and
// runs under callgrind (`make bench-record CALLGRIND=1`) for instruction counts.
import Foundation
import HTTP1
import ExchangeLog

let small = Array(#"{"id":4711,"name":"tapwire","active":true,"score":0.97,"tags":["proxy","bench"],"updated":"2026-12-02T10:11:12Z"}"#.utf8)

/// A 64 KiB-ish API page: nested objects, escapes, numbers of every shape.
func page(bytes: Int) -> [UInt8] {
    var items: [String] = []
    var size = 2
    var i = 0
    while size < bytes - 400 {
        let item = #"{"id":\#(100000 + i * 7),"name":"item-\#(i)","full_name":"owner\#(i % 97)/item-\#(i)","private":\#(i % 3 == 0),"owner":{"login":"owner\#(i % 97)","id":\#(i * 7919 % 90000000),"avatar_url":"https://avatars.example.com/u/\#(i * 31)?v=4","type":"User","site_admin":false},"description":"Déjà vu \"quoted\" \u00e9 line\nbreak","score":\#(i % 100).\#(i % 37),"created_at":"2026-03-1\#(i % 10)T10:11:12Z","homepage":null,"topics":["swift","proxy","json"],"samples":[1,-2.5,6e2,12345678901234567890],"open_issues":\#(i % 300)}"#
        size += item.utf8.count + 1
        items.append(item)
        i += 1
    }
    return Array(("[" + items.joined(separator: ",") + "]").utf8)
}

func exchange(body: [UInt8]) -> CapturedExchange {
    let request = HTTPRequestHead(method: "GET", target: "http://127.0.0.1:19000/doc.json",
                                  headers: [("Host", "127.0.0.1:19000"), ("User-Agent", "wrk"), ("Accept", "*/*")])
    let response = HTTPResponseHead(status: 200, reason: "OK", headers: [
        ("Server", "nginx/1.22.1"), ("Date", "Wed, 02 Dec 2026 13:43:43 GMT"), ("Content-Type", "application/json"),
        ("Content-Length", String(body.count)), ("Last-Modified", "Wed, 02 Dec 2026 13:42:05 GMT"),
        ("Connection", "keep-alive"), ("ETag", "\"6b10202d-71\""), ("Accept-Ranges", "bytes")])
    var clock = ExchangeClock()
    clock.requestStart = 1_790_000_000.041685
    clock.requestSent = clock.requestStart + 0.000002
    clock.firstResponseByte = clock.requestStart + 0.000913
    clock.lastResponseByte = clock.requestStart + 0.000921
    return CapturedExchange(client: "127.0.0.1:42526", url: request.target, request: request,
                            response: response, responseBody: CapturedBody(bytes: body, totalBytes: UInt64(body.count)),
                            clock: clock, connectionReused: true, upstreamAddress: "127.0.0.1:19000")
}

let arguments = CommandLine.arguments
let scale = arguments.count > 1 ? Double(arguments[1]) ?? 1 : 1
let processor = ExchangeProcessor(settings: ProcessorSettings(
    redactHeaders: ["authorization", "proxy-authorization", "cookie", "set-cookie"],
    redactJSONKeys: ["password", "token", "secret", "access_token", "refresh_token", "api_key"]))
let ids = RecordIDGenerator()
/// A second argument, `small` or `64k`, measures only that document.
let only = arguments.count > 2 ? arguments[2] : nil

for (name, body, count) in [("small JSON", small, 200_000), ("64 KiB JSON", page(bytes: 65_536), 2_000)] {
    if let only, !name.hasPrefix(only == "64k" ? "64" : only) { continue }
    let x = exchange(body: body)
    let runs = max(1, Int(Double(count) * scale))
    var bytes = 0
    // Warm up (allocator, lazily built tables), then the timed runs.
    for _ in 0..<min(runs, 100) { bytes &+= processor.record(for: x, id: ids.nextID(startTime: x.clock.requestStart)).count }
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<runs { bytes &+= processor.record(for: x, id: ids.nextID(startTime: x.clock.requestStart)).count }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let line = processor.record(for: x, id: "x")
    print(String(format: "%@: %d B body, %d B record, %.2f µs/record (%d records)", name, body.count, line.count,
                 seconds / Double(runs) * 1e6, runs))
}
