import CGlibcExtensions
import ExchangeLog
import LogTools
import ResponseSerialization

/// The JSON API the page uses (docs/viewer.md). Every answer is built from log records through
/// LogTools: pages of rows (`RecordPager`, `RecordSummary`), one record (a page of one, by id), `curl`
/// text (`CurlCommand`), a diff (`ExchangeDiff`), HAR (`HARExport`), the live rows (`LiveFeed`).
/// A bad query is a 400 naming the column.
struct ViewerAPI {
    let server: ViewerServer

    private var layout: LogFileLayout { server.layout }
    private var source: RecordSource { RecordSource(layout: layout, follow: false, wait: { false }) }

    /// The `q` parameter parsed, or the 400 that names its column.
    private func query(_ request: ViewerRequest) -> Result<Query, ViewerResponseFailure> {
        let text = request.parameters["q"] ?? ""
        do {
            return .success(try Query.parse(text))
        } catch {
            return .failure(ViewerResponseFailure(.error(400, "Bad Request", error.message, column: error.column)))
        }
    }

    /// `GET /api/query?q=`: `{"valid":true}` when the query parses, else 400 with its column.
    /// The page checks a query here before it swaps its list: parsing reads no records.
    func check(_ request: ViewerRequest) -> ViewerResponse {
        switch self.query(request) {
        case .success: return .json(Array(#"{"valid":true}"#.utf8))
        case .failure(let f): return f.response
        }
    }

    /// `GET /api/records?q=&before=CURSOR&limit=N`: `{"rows":[…],"next":CURSOR|null}`, newest first.
    func records(_ request: ViewerRequest) -> ViewerResponse {
        let query: Query
        switch self.query(request) {
        case .success(let q): query = q
        case .failure(let f): return f.response
        }
        var cursor: RecordCursor?
        if let text = request.parameters["before"], !text.isEmpty {
            guard let parsed = RecordCursor(text: text) else { return .error(400, "Bad Request", "before: not a cursor this viewer gave") }
            cursor = parsed
        }
        let limit = request.parameters["limit"].flatMap { Int($0) } ?? 500
        let page: RecordPage
        do {
            page = try RecordPager.page(layout: layout, query: query, before: cursor, limit: limit)
        } catch {
            return .error(500, "Internal Server Error", "\(error)")
        }
        var out = Array("{\"rows\":[".utf8)
        var first = true
        for line in page.lines {
            guard let record = try? JSONParser.parse(line, allowFragments: false) else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.write(RecordSummary.json(record), into: &out)
        }
        out += Array("],\"next\":".utf8)
        if let next = page.next { JSONWriter.appendQuoted(next.text, into: &out) } else { out += Array("null".utf8) }
        out.append(UInt8(ascii: "}"))
        return .json(out)
    }

    /// The records with `ids`. Newest first, stopping at the match: ids sort by time, and the
    /// records a person opens are mostly recent, which a forward scan (`RecordLookup`) would
    /// reach last, after inflating every rotated file.
    private func lookup(_ ids: [String]) -> Result<[String: JSON], ViewerResponseFailure> {
        var found: [String: JSON] = [:]
        for id in ids where found[id] == nil {
            // Record ids are hex digits and dashes; anything else is no id (and never reaches the query text).
            guard !id.isEmpty, id.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
                return .failure(ViewerResponseFailure(.error(400, "Bad Request", "not a record id: \(id)")))
            }
            do {
                let page = try RecordPager.page(layout: layout, query: Query.parse("id=\"\(id)\""), before: nil, limit: 1)
                guard let line = page.lines.first, let record = try? JSONParser.parse(line, allowFragments: false) else {
                    return .failure(ViewerResponseFailure(.error(404, "Not Found", "no record with id \(id)")))
                }
                found[id] = record
            } catch {
                return .failure(ViewerResponseFailure(.error(500, "Internal Server Error", "\(error)")))
            }
        }
        return .success(found)
    }

    /// `GET /api/record?id=ID`: the record as logged (numbers as their text, members in order).
    func record(_ request: ViewerRequest) -> ViewerResponse {
        let id = request.parameters["id"] ?? ""
        switch lookup([id]) {
        case .failure(let f): return f.response
        case .success(let found):
            var out: [UInt8] = []
            if let record = found[id] { JSONWriter.write(record, into: &out) }
            return .json(out)
        }
    }

    /// `GET /api/curl?id=ID`: `tapwire curl ID`'s text.
    func curl(_ request: ViewerRequest) -> ViewerResponse {
        let id = request.parameters["id"] ?? ""
        switch lookup([id]) {
        case .failure(let f): return f.response
        case .success(let found):
            guard let record = found[id] else { return .error(404, "Not Found", "no record with id \(id)") }
            do {
                return .text(CurlCommand.render(try RecordedRequest(record: record)))
            } catch {
                return .error(422, "Unprocessable Content", "\(error)")
            }
        }
    }

    /// `GET /api/diff?a=ID&b=ID`: `{"lines":[…]}`, `tapwire diff`'s lines.
    func diff(_ request: ViewerRequest) -> ViewerResponse {
        let a = request.parameters["a"] ?? "", b = request.parameters["b"] ?? ""
        switch lookup([a, b]) {
        case .failure(let f): return f.response
        case .success(let found):
            guard let left = found[a], let right = found[b] else { return .error(404, "Not Found", "no such record") }
            var out: [UInt8] = []
            JSONWriter.write(.object([JSON.Member("lines", .array(ExchangeDiff(left, right).lines.map(JSON.string)))]), into: &out)
            return .json(out)
        }
    }

    /// `GET /api/har?q=`: the query's exchanges as one HAR 1.2 document, streamed as written.
    func har(_ request: ViewerRequest) -> ViewerServer.Answer {
        let query: Query
        switch self.query(request) {
        case .success(let q): query = q
        case .failure(let f): return .whole(f.response)
        }
        let source = self.source
        return .stream { socket in
            var head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Disposition: attachment; filename=\"tapwire.har\"\r\n"
            for (name, value) in ViewerResponse.commonHeaders { head += "\(name): \(value)\r\n" }
            guard socket.write(Array((head + "Connection: close\r\n\r\n").utf8)) else { return }
            let writer = HARWriter(output: { bytes in
                guard socket.write(bytes) else { throw ViewerError("the client went away") }
            })
            _ = try? HARExport.run(source: source, filter: query, writer: writer)
        }
    }

    /// `GET /api/live?q=&rows=N`: Server-Sent Events, each `data:` line a JSON array of the new
    /// rows the query keeps, oldest first; `event: gap` (`{"skipped":N,"rows":M}`, M the rows
    /// after it in this write) before rows when N
    /// older ones were left out (more than `rows` in a look, at most `maxRowsPerLook`, its
    /// default, or more than `maxQueuedRows` waiting to be sent: the page fills them in from
    /// `/api/records`). A page asks for about two screens of rows a look:
    /// more would be made, sent and parsed only to scroll out of view at once.
    /// `every=S` (seconds, 0 to 10; 0, the default, sends each look's rows as they come): events
    /// at most that often; a row after a quiet spell goes at once, and under load the looks in
    /// between are merged into one event (their rows and gaps), so a page that draws every
    /// 0.75 s is not woken ten times a second.
    func live(_ request: ViewerRequest) -> ViewerServer.Answer {
        let query: Query
        switch self.query(request) {
        case .success(let q): query = q
        case .failure(let f): return .whole(f.response)
        }
        // The feed caps it at maxRowsPerLook.
        var rowsPerLook: Int?
        if let text = request.parameters["rows"], !text.isEmpty {
            guard let n = Int(text), n >= 1 else { return .whole(.error(400, "Bad Request", "rows: expected a positive integer, found \"\(text)\"")) }
            rowsPerLook = n
        }
        var every = 0.0
        if let text = request.parameters["every"], !text.isEmpty {
            guard let s = Double(text), s.isFinite, s >= 0, s <= 10 else {
                return .whole(.error(400, "Bad Request", "every: expected seconds between 0 and 10, found \"\(text)\""))
            }
            every = s
        }
        let feed = server.live
        return .stream { socket in
            // Writing rows for as long as the page is open: below the proxy, as the feed is.
            _ = tapwire_raise_thread_nice(tapwire_current_thread_id(), LiveFeed.liveNice)
            let subscriber = feed.subscribe(query, rowsPerLook: rowsPerLook)
            defer { feed.unsubscribe(subscriber) }
            var head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            for (name, value) in ViewerResponse.commonHeaders { head += "\(name): \(value)\r\n" }
            guard socket.write(Array((head + "Connection: close\r\n\r\n: live\n\n").utf8)) else { return }
            while true {
                let (rows, skipped) = subscriber.take(timeout: server.settings.heartbeatInterval)
                // One event per batch (the rows of one look at the file): a page dispatches and
                // parses ten events a second, not one per exchange.
                var out: [UInt8] = []
                if skipped > 0 { out += Array("event: gap\ndata: {\"skipped\":\(skipped),\"rows\":\(rows.count)}\n\n".utf8) }
                if !rows.isEmpty {
                    out += Array("data: [".utf8)
                    for (i, row) in rows.enumerated() {
                        if i > 0 { out.append(UInt8(ascii: ",")) }
                        out += row
                    }
                    out += Array("]\n\n".utf8)
                }
                if out.isEmpty { out = Array(": keep-alive\n\n".utf8) }
                guard socket.write(out) else { return }
                // The next event no sooner than `every` after this one; rows meanwhile queue
                // in the subscriber (a gap there drops the older ones, and it holds at most
                // `maxQueuedRows`, the older ones beyond that being a gap too).
                if every > 0 && (!rows.isEmpty || skipped > 0) { usleep(UInt32(every * 1_000_000)) }
            }
        }
    }

    /// `POST /api/replay` with `id=ID` (form body): sends the request again through the proxy;
    /// the new record carries `replayOf`. `{"id","status"}` or an error.
    func replay(_ request: ViewerRequest) -> ViewerResponse {
        guard let replayer = server.replayer, let proxy = server.boundAddress else {
            return .error(403, "Forbidden", "tapwire view is read-only: replay from the viewer of tapwire run, or with tapwire replay")
        }
        let id = ViewerRequest.form(String(decoding: request.body, as: UTF8.self))["id"] ?? ""
        switch lookup([id]) {
        case .failure(let f): return f.response
        case .success(let found):
            guard let record = found[id] else { return .error(404, "Not Found", "no record with id \(id)") }
            do {
                let status = try replayer(record, proxy)
                var out: [UInt8] = []
                JSONWriter.write(.object([JSON.Member("id", .string(id)), JSON.Member("status", .string(status))]), into: &out)
                return .json(out)
            } catch {
                return .error(502, "Bad Gateway", "\(error)")
            }
        }
    }
}

struct ViewerResponseFailure: Error {
    let response: ViewerResponse
    init(_ response: ViewerResponse) { self.response = response }
}
