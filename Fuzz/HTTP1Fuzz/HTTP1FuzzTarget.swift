// libFuzzer target for Sources/HTTP1: the head parsers, body framing and BodyFramer.
// Compiled together with the HTTP1 sources into one module (see Fuzz/build.sh), so
// internal API is reachable. Any broken invariant aborts, which libFuzzer records
// as a crash with the input that caused it.

/// Deterministic choices derived from the input itself, so a crash file replays exactly.
struct InputRandom {
    var state: UInt64
    init(_ bytes: UnsafeRawBufferPointer) {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325   // FNV-1a
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        state = h
    }
    mutating func next() -> UInt64 {   // SplitMix64
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
}

enum Outcome<Head: Equatable>: Equatable {
    case incomplete
    case complete(Head, Int)
    case refused(HTTPParseError)
}

func parseRequest(_ bytes: UnsafeRawBufferPointer, max: Int) -> Outcome<HTTPRequestHead> {
    do throws(HTTPParseError) {
        switch try HTTPHeadParser.parseRequestHead(bytes, maxHeadBytes: max) {
        case .incomplete: return .incomplete
        case .complete(let head, let length): return .complete(head, length)
        }
    } catch { return .refused(error) }
}

func parseResponse(_ bytes: UnsafeRawBufferPointer, max: Int) -> Outcome<HTTPResponseHead> {
    do throws(HTTPParseError) {
        switch try HTTPHeadParser.parseResponseHead(bytes, maxHeadBytes: max) {
        case .incomplete: return .incomplete
        case .complete(let head, let length): return .complete(head, length)
        }
    } catch { return .refused(error) }
}

/// One resuming parser given `bytes` as it grows in random reads (mostly short), until
/// it answers something other than `.incomplete` or all bytes are there: the answer
/// must be the one-shot parse's, however the reads were cut.
func resumed<Head: Equatable>(_ bytes: UnsafeRawBufferPointer, max: Int, _ random: inout InputRandom,
                              parse: (inout HTTPHeadParser, UnsafeRawBufferPointer, Int) throws(HTTPParseError) -> HeadParseResult<Head>) -> Outcome<Head> {
    var parser = HTTPHeadParser()
    var end = 0
    while true {
        end = min(bytes.count, end + 1 + random.below(random.below(4) == 0 ? 3 : 40))
        let outcome: Outcome<Head>
        do throws(HTTPParseError) {
            switch try parse(&parser, UnsafeRawBufferPointer(rebasing: bytes[0..<end]), max) {
            case .incomplete: outcome = .incomplete
            case .complete(let head, let length): outcome = .complete(head, length)
            }
        } catch { outcome = .refused(error) }
        if outcome != .incomplete || end == bytes.count { return outcome }
    }
}

/// What a framer did with a body, so two runs over different splits can be compared.
struct FramerResult: Equatable {
    var consumed = 0
    var payload: [UInt8] = []
    var complete = false
    var failed = false
    var completeAtEOF = false
}

/// Runs a framer over `bytes`, cut at the given offsets (ascending, inside bounds).
func frame(_ framing: BodyFraming, _ bytes: UnsafeRawBufferPointer, cuts: [Int]) -> FramerResult {
    var framer = BodyFramer(framing)
    var result = FramerResult()
    var start = 0
    for end in cuts + [bytes.count] {
        let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        start = end
        if framer.isComplete { break }
        do throws(HTTPParseError) {
            let n = try framer.consume(piece) { result.payload.append(contentsOf: $0) }
            require(n >= 0 && n <= piece.count, "consume returned \(n) for \(piece.count) bytes")
            if n < piece.count { require(framer.isComplete, "consume stopped early without completing") }
            result.consumed += n
        } catch {
            require(error.kind == .malformed, "framer threw \(error.kind)")
            result.failed = true
            break
        }
    }
    result.complete = framer.isComplete
    require(framer.payloadBytes == UInt64(result.payload.count), "payloadBytes \(framer.payloadBytes) != \(result.payload.count)")
    require(result.consumed <= bytes.count, "consumed more than given")
    switch framing {
    case .none:
        require(result.complete && result.consumed == 0, "framing none consumed bytes")
    case .contentLength(let n):
        if !result.failed {
            require(UInt64(result.payload.count) == min(n, UInt64(bytes.count)), "length body payload size")
            require(result.payload.elementsEqual(UnsafeRawBufferPointer(rebasing: bytes[0..<result.payload.count])),
                    "length body payload differs from input")
            require(result.complete == (UInt64(bytes.count) >= n), "length body completion")
        }
    case .closeDelimited:
        require(!result.failed && result.consumed == bytes.count && result.payload.count == bytes.count,
                "close-delimited body must take everything")
    case .chunked:
        if !result.failed && result.consumed > 0 {
            require(result.payload.count < result.consumed, "chunked payload not smaller than consumed bytes")
        }
    }
    if !result.failed {
        let atEOF = framer.finishAtEOF()
        require(atEOF == (result.complete || framing == .closeDelimited), "finishAtEOF disagrees")
        result.completeAtEOF = atEOF
    } else {
        // How far a refused body got depends on where the reads were cut; only the refusal counts.
        result.consumed = 0
        result.payload = []
    }
    return result
}

/// Frames `body` in one piece and in random splits; the outcome must not depend on the splits.
/// Returns how many bytes the body took, or nil when it failed or did not complete.
func checkFraming(_ framing: BodyFraming, _ body: UnsafeRawBufferPointer, _ random: inout InputRandom) -> Int? {
    let whole = frame(framing, body, cuts: [])
    var cuts: [Int] = []
    if body.count > 0 {
        var at = 0
        while true {
            // Mostly short reads, so state carried between reads gets exercised everywhere.
            at += 1 + random.below(random.below(4) == 0 ? 3 : 40)
            if at >= body.count { break }
            cuts.append(at)
        }
    }
    let split = frame(framing, body, cuts: cuts)
    require(whole == split, "framer result depends on read splits: \(whole) vs \(split) cuts \(cuts)")
    if body.count <= 64 {
        let bytewise = frame(framing, body, cuts: body.count > 1 ? Array(1..<body.count) : [])
        require(whole == bytewise, "framer result differs byte by byte")
    }
    return (whole.complete && !whole.failed) ? whole.consumed : nil
}

/// Parsing must give the same answer however much of the head has arrived: any
/// shorter prefix is `.incomplete`, and the exact head parses to the same value.
func checkPrefixes<Head: Equatable>(_ bytes: UnsafeRawBufferPointer, length: Int, head: Head, max: Int,
                                    _ random: inout InputRandom,
                                    parse: (UnsafeRawBufferPointer, Int) -> Outcome<Head>) {
    let exact = parse(UnsafeRawBufferPointer(rebasing: bytes[0..<length]), max)
    require(exact == .complete(head, length), "head alone parses differently")
    let cut = random.below(length)
    let prefix = parse(UnsafeRawBufferPointer(rebasing: bytes[0..<cut]), max)
    require(prefix == .incomplete, "prefix of \(cut) of a \(length)-byte head gives \(prefix)")
}

func reparse<Head: Equatable>(_ wire: [UInt8], _ head: Head, parse: (UnsafeRawBufferPointer, Int) -> Outcome<Head>) {
    let again = wire.withUnsafeBytes { parse($0, wire.count) }
    require(again == .complete(head, wire.count), "serialized head re-parses as \(again), not \(head)")
}

/// The one-pass forwarded response head equals the two-step path, and re-parses.
func checkForwardedResponse(_ head: HTTPResponseHead, _ random: inout InputRandom) {
    let connection = [nil, "close", "keep-alive"][random.below(3)]
    var twoStep = head
    twoStep.version = .http1_1
    twoStep.headers = head.headers.removingHopByHop(keepUpgrade: false)
    if let connection { twoStep.headers.add(name: "Connection", value: connection) }
    let wire = head.forwardedWireForm(connection: connection)
    require(wire == twoStep.serialized(), "forwardedWireForm differs from removingHopByHop + serialized")
    reparse(wire, twoStep, parse: parseResponse)
}

/// A request the proxy would forward: its target form parses without trapping, the
/// one-pass forwarded head equals the two-step path, and it re-parses as itself.
func checkForwardedRequest(_ head: HTTPRequestHead, _ random: inout InputRandom) {
    guard let form = try? head.proxyForm(), case .absolute(let authority, let originTarget) = form else { return }
    let keepUpgrade = random.below(2) == 0
    let forwarded = head.forwardedRequestHead(authority: authority, originTarget: originTarget, keepUpgrade: keepUpgrade)
    let wire = head.forwardedWireForm(authority: authority, originTarget: originTarget, keepUpgrade: keepUpgrade)
    require(wire == forwarded.serialized(), "request forwardedWireForm differs from forwardedRequestHead + serialized")
    reparse(wire, forwarded, parse: parseRequest)
}

func checkRequests(_ input: UnsafeRawBufferPointer, max: Int, _ random: inout InputRandom) {
    var rest = input
    // Pipelined requests: keep going while each message is complete.
    for _ in 0..<4 {
        let outcome = parseRequest(rest, max: max)
        let split = resumed(rest, max: max, &random) { parser, bytes, max throws(HTTPParseError) in
            try parser.parseRequestHead(bytes, maxHeadBytes: max)
        }
        require(split == outcome, "resumed request parse gives \(split), one read \(outcome)")
        switch outcome {
        case .incomplete:
            require(rest.count <= max, "incomplete beyond the limit")
            return
        case .refused(let error):
            if error.kind == .headTooLarge { require(rest.count > max, "headTooLarge within the limit") }
            require(error.kind != .unsupportedTransferCoding, "head parser reported a transfer coding")
            return
        case .complete(let head, let length):
            require(length > 0 && length <= rest.count && length <= max, "head length \(length) of \(rest.count), max \(max)")
            checkPrefixes(rest, length: length, head: head, max: max, &random, parse: parseRequest)
            reparse(head.serialized(), head, parse: parseRequest)
            checkForwardedRequest(head, &random)
            let framing: BodyFraming
            do throws(HTTPParseError) { framing = try head.bodyFraming() } catch { return }
            require(framing != .closeDelimited, "request framed by close")
            if case .contentLength(let n) = framing {
                require(head.headers.contains(name: "content-length") && !head.headers.contains(name: "transfer-encoding"), "CL framing source")
                _ = n
            }
            if framing == .chunked {
                require(!head.headers.contains(name: "content-length"), "chunked with CL")
                require(head.version == .http1_1, "chunked request in HTTP/1.0")
            }
            let body = UnsafeRawBufferPointer(rebasing: rest[length...])
            guard let taken = checkFraming(framing, body, &random) else { return }
            rest = UnsafeRawBufferPointer(rebasing: body[taken...])
        }
    }
}

func checkResponses(_ input: UnsafeRawBufferPointer, max: Int, _ random: inout InputRandom) {
    let methods = ["GET", "HEAD", "CONNECT", "POST"]
    var rest = input
    for _ in 0..<4 {
        let outcome = parseResponse(rest, max: max)
        let split = resumed(rest, max: max, &random) { parser, bytes, max throws(HTTPParseError) in
            try parser.parseResponseHead(bytes, maxHeadBytes: max)
        }
        require(split == outcome, "resumed response parse gives \(split), one read \(outcome)")
        switch outcome {
        case .incomplete:
            require(rest.count <= max, "incomplete beyond the limit")
            return
        case .refused(let error):
            if error.kind == .headTooLarge { require(rest.count > max, "headTooLarge within the limit") }
            return
        case .complete(let head, let length):
            require(length > 0 && length <= rest.count && length <= max, "head length \(length) of \(rest.count), max \(max)")
            require((100...999).contains(head.status), "status \(head.status)")
            checkPrefixes(rest, length: length, head: head, max: max, &random, parse: parseResponse)
            reparse(head.serialized(), head, parse: parseResponse)
            checkForwardedResponse(head, &random)
            let method = methods[random.below(methods.count)]
            let framing: BodyFraming
            do throws(HTTPParseError) { framing = try head.bodyFraming(requestMethod: method) } catch {
                require(error.kind == .malformed, "response framing threw \(error.kind)")
                return
            }
            if method == "HEAD" || head.status < 200 || head.status == 204 || head.status == 304 {
                require(framing == .none, "bodyless response framed as \(framing)")
            }
            let body = UnsafeRawBufferPointer(rebasing: rest[length...])
            guard let taken = checkFraming(framing, body, &random) else { return }
            rest = UnsafeRawBufferPointer(rebasing: body[taken...])
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    var random = InputRandom(input)
    // Mostly a generous limit; sometimes a tight one, so the size checks get exercised.
    let max = random.below(8) == 0 ? random.below(300) : 64 * 1024
    checkRequests(input, max: max, &random)
    checkResponses(input, max: max, &random)
    return 0
}
