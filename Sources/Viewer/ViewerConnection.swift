import HTTP1

/// One viewer connection on its own thread: requests one after another (keep-alive), each
/// head and body read whole (at most `viewer.maxRequestBytes`), answered, then the
/// next. A streamed answer (the live list, HAR) ends the connection.
struct ViewerConnection {
    let server: ViewerServer
    let socket: ViewerSocket
    var first: HTTPRequestHead?
    var buffer: [UInt8]

    init(server: ViewerServer, socket: ViewerSocket, first: HTTPRequestHead?, buffered: [UInt8]) {
        self.server = server
        self.socket = socket
        self.first = first
        buffer = buffered
    }

    mutating func run() {
        defer { socket.close() }
        let local = socket.localAddress()
        while true {
            let head: HTTPRequestHead
            if let given = first {
                head = given
                first = nil
            } else {
                guard let next = readHead() else { return }
                head = next
            }
            let keepAlive = head.version == .http1_1 && !head.headers.listContains(name: "Connection", token: "close")
            if head.headers.contains(name: "Transfer-Encoding") {
                refuse(411, "Length Required", "send a Content-Length body")
                return
            }
            let length = head.headers.first(name: "Content-Length").flatMap { Int($0) } ?? 0
            guard length >= 0, length <= server.settings.maxRequestBytes else {
                refuse(413, "Content Too Large", "the viewer takes bodies of at most \(server.settings.maxRequestBytes) bytes (viewer.maxRequestBytes)")
                return
            }
            while buffer.count < length {
                if socket.read(into: &buffer) == 0 { return }
            }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            switch server.answer(ViewerRequest(head: head, body: body), arrivedAt: local) {
            case .whole(let response):
                let bytes = response.head(keepAlive: keepAlive) + (head.method == "HEAD" ? [] : response.body)
                if !socket.write(bytes) || !keepAlive { return }
            case .stream(let write):
                write(socket)
                return
            }
        }
    }

    private mutating func readHead() -> HTTPRequestHead? {
        while true {
            if !buffer.isEmpty {
                let limit = server.settings.maxRequestBytes
                let result: HeadParseResult<HTTPRequestHead>
                do {
                    result = try buffer.withUnsafeBytes { try HTTPHeadParser.parseRequestHead($0, maxHeadBytes: limit) }
                } catch {
                    if (error as? HTTPParseError)?.kind == .headTooLarge {
                        refuse(431, "Request Header Fields Too Large", "the viewer reads request heads of at most \(limit) bytes (viewer.maxRequestBytes)")
                    } else {
                        refuse(400, "Bad Request", "malformed request head")
                    }
                    return nil
                }
                if case .complete(let head, let length) = result {
                    buffer.removeFirst(length)
                    return head
                }
            }
            if socket.read(into: &buffer) == 0 { return nil }
        }
    }

    private func refuse(_ status: Int, _ reason: String, _ message: String) {
        let response = ViewerResponse.text(message + "\n", status: status, reason: reason)
        socket.write(response.head(keepAlive: false) + response.body)
    }
}
