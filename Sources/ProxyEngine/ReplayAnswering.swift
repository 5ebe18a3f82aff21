import CLibevent
import Foundation
import HTTP1

/// Offline replay on a session: a request its listener's `replay` has a recorded answer for is
/// answered from it, and recorded like any exchange with `replayedFrom`; one without gets what
/// `replay.notFound` says. Nothing goes to the network for either.
extension ClientSession {
    /// Answers `head` from the listener's recorded responses; false when the request is to go
    /// to the network as usual (no replay, or `notFound: forward` and no match).
    func answerFromReplay(_ head: HTTPRequestHead, url: String, framing: BodyFraming) -> Bool {
        guard let replay = role.replay else { return false }
        let answer = replay.answer(method: head.method, url: url)
        if answer == nil && replay.notFound == .forward { return false }
        // A body whose bytes are all buffered is read and dropped, so the connection stays
        // usable; any other (chunked, or still arriving) is left unread and the connection
        // closes after the answer, as for Tapwire's own endpoints.
        var bodyLeftUnread = false
        switch framing {
        case .none: break
        case .contentLength(let n):
            if let input = clientInput, UInt64(evbuffer_get_length(input)) >= n {
                evbuffer_drain(input, Int(n))
                engine.metrics.bytesFromClients.add(Int(n))
            } else {
                bodyLeftUnread = true
            }
        case .chunked, .closeDelimited: bodyLeftUnread = true
        }
        let close = head.wantsClose || bodyLeftUnread
        guard let answer else {
            let status: ProxyStatus = replay.notFound == .badGateway ? .badGateway : .notFound
            respondError(status, "no recorded response for \(head.method) \(url) in \(replay.directory) (replay.notFound)", close: close)
            return true
        }
        let start = Date().timeIntervalSince1970
        var fields = answer.headers
        // 1xx, 204 and 304 have no body and no Content-Length (RFC 9110 §8.6); HEAD gets the
        // fields alone, with the length of the body a GET would get: the recorded HEAD's own
        // when it came from a HEAD (none if it had none), else the body's. Any other request
        // gets the length of the body sent, so the framing always holds.
        let statusHasBody = answer.status >= 200 && answer.status != 204 && answer.status != 304
        if statusHasBody {
            if head.method != "HEAD" || !answer.fromHEAD {
                fields.append(("Content-Length", String(answer.body.count)))
            } else if let length = answer.headLength {
                fields.append(("Content-Length", length))
            }
        }
        if close { fields.append(("Connection", "close")) }
        var text = "HTTP/1.1 \(answer.status) \(answer.reason)\r\n"
        for field in fields { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"
        write(Array(text.utf8))
        let sendsBody = statusHasBody && head.method != "HEAD"
        if sendsBody { write(answer.body) }
        flush()
        let end = Date().timeIntervalSince1970
        var clock = ExchangeClock()
        clock.requestStart = start
        clock.requestSent = start
        clock.firstResponseByte = end
        clock.lastResponseByte = end
        let kept = sendsBody ? Array(answer.body.prefix(config.captureMaxBodyBytes)) : []
        var record = CapturedExchange(
            client: peerText, url: url, request: head,
            requestBody: CapturedBody(bytes: [], totalBytes: 0, cutShort: framing != .none && bodyLeftUnread),
            response: HTTPResponseHead(status: answer.status, reason: answer.reason,
                                       headers: HTTPHeaders(fields.map { ($0.name, $0.value) })),
            responseBody: CapturedBody(bytes: kept, totalBytes: UInt64(sendsBody ? answer.body.count : 0)),
            clock: clock)
        record.replayedFrom = answer.recordID
        engine.metrics.recordExchange(status: answer.status, duration: end - start)
        engine.sink?.accept(.http(record))
        if close { closeAfterFlush() } else { exchangeFinished(keepAlive: true) }
        return true
    }
}
