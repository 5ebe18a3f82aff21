import CBrotli
import CZlib
import CZstd
import Foundation

/// A body with its Content-Encoding undone.
public struct DecodedContent: Sendable, Equatable {
    /// The decoded bytes: the whole content, or a prefix of it when `truncated`.
    public var bytes: [UInt8]
    /// `bytes` is only a prefix of the content: the output reached the decoder's
    /// `maxOutputBytes`, or the caller said the encoded input was cut.
    public var truncated: Bool
    /// The codings undone, lowercased, in the order the decoder undid them
    /// (the reverse of the header's order); `identity` never appears.
    public var codings: [String]

    /// - Parameters:
    ///   - bytes: The decoded bytes.
    ///   - truncated: Whether they are only a prefix of the content.
    ///   - codings: The codings undone, in the order they were undone.
    public init(bytes: [UInt8], truncated: Bool, codings: [String]) {
        self.bytes = bytes
        self.truncated = truncated
        self.codings = codings
    }
}

/// Why a Content-Encoding could not be undone.
public enum ContentDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A coding Tapwire cannot undo (e.g. `compress`), lowercased as listed.
    case unsupported(String)
    /// The data is not valid for `coding`; `message` is the library's own words.
    /// A stream that stops before its end, when the caller did not say the input
    /// was cut, is reported here with `unexpectedEndOfInput` as the message:
    /// for the serializer an incomplete stream is as unusable as a damaged one.
    case corrupt(coding: String, message: String)

    /// The `message` of a stream that stops before its end when the input was not cut.
    public static let unexpectedEndOfInput = "input ended before the end of the compressed stream"

    /// The coding that failed, lowercased.
    public var coding: String {
        switch self {
        case .unsupported(let coding): return coding
        case .corrupt(let coding, _): return coding
        }
    }

    /// What went wrong: the log record's message.
    public var message: String {
        switch self {
        case .unsupported(let coding): return "unsupported content coding \"\(coding)\""
        case .corrupt(_, let message): return message
        }
    }

    /// The coding and what went wrong, for people.
    public var description: String {
        switch self {
        case .unsupported: return message
        case .corrupt(let coding, let message): return "\(coding) content could not be decoded: \(message)"
        }
    }
}

/// Undoes an HTTP Content-Encoding (RFC 9110 §8.4): `identity`, `gzip`/`x-gzip`,
/// `deflate`, `br`, `zstd`, stacked in any order.
///
/// Output is bounded: the libraries are streamed into a fixed chunk, and decoding
/// stops once `maxOutputBytes` are produced (`truncated` is then set), so a small
/// body that inflates to gigabytes costs at most about `maxOutputBytes` plus one
/// chunk per coding layer (plus the libraries' own windows: 32 KiB for zlib, at most
/// 16 MiB for brotli, 8 MiB for zstd). With stacked codings every intermediate layer is
/// bounded the same way, and a bounded layer is handed to the next as cut input.
public struct ContentDecoder: Sendable {
    /// Each library call writes at most this many bytes before they are kept.
    public static let outputChunkSize = 64 * 1024

    /// 2^23 = 8 MiB, the largest zstd window RFC 9659 lets HTTP content use.
    public static let zstdWindowLogMax: Int32 = 23

    /// At most this many decoded bytes are produced; the rest is cut (`truncated`).
    public let maxOutputBytes: Int

    /// - Parameter maxOutputBytes: The bound on decoded bytes; a negative value counts as 0.
    public init(maxOutputBytes: Int) {
        self.maxOutputBytes = Swift.max(0, maxOutputBytes)
    }

    /// The header's codings in listed (= applied) order: split on `,`, trimmed
    /// of spaces and tabs, lowercased, empty list elements dropped.
    /// - Parameter contentEncoding: The Content-Encoding field value; nil when there is none.
    public static func codings(in contentEncoding: String?) -> [String] {
        guard let contentEncoding else { return [] }
        return contentEncoding.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingSpacesAndTabs().lowercased() }
            .filter { !$0.isEmpty }
    }

    /// Undoes `contentEncoding` on `input`.
    ///
    /// - Parameter inputTruncated: the caller cut `input` (e.g. at the capture
    ///   limit). A stream that then stops early is not an error: the prefix decoded
    ///   so far is returned. The result is always `truncated` in that case, since
    ///   the missing bytes could hold more content even after a complete stream
    ///   (another gzip member or zstd frame).
    ///
    /// Zero-length input decodes to zero bytes under any coding, known or not, because
    /// servers send empty bodies labelled `gzip` (204, HEAD, empty 200), and a HEAD or
    /// 304 answer labelled `dcb` has nothing to fail on.
    ///
    /// At most `maxCodings` stacked codings are undone (curl's limit, CVE-2022-32206):
    /// each is a full pass over up to `maxOutputBytes`, and a 60 KB header can list 12,000.
    ///
    /// Bytes after a complete gzip, deflate or brotli stream that do not start
    /// another gzip member are ignored, as gzip(1) and browsers do; zstd reads on
    /// for further frames and reports anything else as corrupt.
    public func decode(_ input: [UInt8], contentEncoding: String?,
                       inputTruncated: Bool = false) throws(ContentDecodingError) -> DecodedContent {
        if input.isEmpty { return Self.empty(contentEncoding, inputTruncated: inputTruncated) }
        let plan = try Self.undoPlan(contentEncoding)
        // Nothing to undo and within the limit: the input array itself, shared, not copied
        // (a 64 KiB memcpy per logged body).
        if plan.isEmpty && input.count <= maxOutputBytes {
            return DecodedContent(bytes: input, truncated: inputTruncated, codings: [])
        }
        return try input.withUnsafeBytes { raw in
            decodeResult(raw, plan: plan, inputTruncated: inputTruncated)
        }.get()
    }

    /// `decode(_:contentEncoding:inputTruncated:)` over `Data`, without copying the input.
    /// - Parameters:
    ///   - input: The encoded body.
    ///   - contentEncoding: The Content-Encoding field value; nil when there is none.
    ///   - inputTruncated: The caller cut `input`; default false.
    public func decode(_ input: Data, contentEncoding: String?,
                       inputTruncated: Bool = false) throws(ContentDecodingError) -> DecodedContent {
        if input.isEmpty { return Self.empty(contentEncoding, inputTruncated: inputTruncated) }
        let plan = try Self.undoPlan(contentEncoding)
        return try input.withUnsafeBytes { raw in
            decodeResult(raw, plan: plan, inputTruncated: inputTruncated)
        }.get()
    }

    // MARK: - Plan

    enum Coding: Sendable, Equatable {
        case gzip, deflate, brotli, zstd
    }

    struct Step: Sendable, Equatable {
        var name: String
        var coding: Coding
    }

    /// Validates every coding before any work, and orders them for undoing.
    static func undoPlan(_ contentEncoding: String?) throws(ContentDecodingError) -> [Step] {
        var steps: [Step] = []
        for name in codings(in: contentEncoding) {
            switch name {
            case "identity": continue
            case "gzip", "x-gzip": steps.append(Step(name: name, coding: .gzip))
            case "deflate": steps.append(Step(name: name, coding: .deflate))
            case "br": steps.append(Step(name: name, coding: .brotli))
            case "zstd": steps.append(Step(name: name, coding: .zstd))
            default: throw .unsupported(name)
            }
        }
        if steps.count > maxCodings {
            throw .corrupt(coding: steps[0].name, message: "\(steps.count) content codings stacked; at most \(maxCodings) are undone")
        }
        return steps.reversed()
    }

    /// See `decode`.
    public static let maxCodings = 5

    /// No bytes: nothing to undo or to fail on; `codings` as listed when all are known.
    private static func empty(_ contentEncoding: String?, inputTruncated: Bool) -> DecodedContent {
        let plan = (try? undoPlan(contentEncoding)) ?? []
        return DecodedContent(bytes: [], truncated: inputTruncated, codings: plan.map(\.name))
    }

    // MARK: - Layers

    /// One layer's output.
    struct Layer {
        var bytes: [UInt8]
        var truncated: Bool
    }

    private func decodeResult(_ input: UnsafeRawBufferPointer, plan: [Step],
                              inputTruncated: Bool) -> Result<DecodedContent, ContentDecodingError> {
        guard let first = plan.first else {
            let kept = Swift.min(input.count, maxOutputBytes)
            return .success(DecodedContent(bytes: Array(input.prefix(kept)),
                                           truncated: inputTruncated || input.count > kept,
                                           codings: []))
        }
        var layer: Layer
        switch undo(first, input, inputTruncated: inputTruncated) {
        case .success(let decoded): layer = decoded
        case .failure(let error): return .failure(error)
        }
        for step in plan.dropFirst() {
            let previous = layer
            let next = previous.bytes.withUnsafeBytes { raw in
                undo(step, raw, inputTruncated: previous.truncated)
            }
            switch next {
            case .success(let decoded): layer = decoded
            case .failure(let error): return .failure(error)
            }
        }
        return .success(DecodedContent(bytes: layer.bytes, truncated: layer.truncated,
                                       codings: plan.map(\.name)))
    }

    private func undo(_ step: Step, _ input: UnsafeRawBufferPointer,
                      inputTruncated: Bool) -> Result<Layer, ContentDecodingError> {
        guard let base = input.baseAddress, input.count > 0 else {
            return .success(Layer(bytes: [], truncated: inputTruncated))
        }
        let bytes = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: input.count)
        let scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: Self.outputChunkSize)
        defer { scratch.deallocate() }
        var run = LayerRun(name: step.name, input: bytes, inputTruncated: inputTruncated,
                           output: BoundedOutput(limit: maxOutputBytes), scratch: scratch)
        switch step.coding {
        case .gzip:
            return run.inflate(.gzip).result
        case .deflate:
            guard Self.startsWithZlibHeader(bytes) else { return run.inflate(.raw).result }
            // Some servers send raw deflate whose first bytes pass the zlib header
            // check; browsers then retry as raw, and so does Tapwire.
            let wrapped = run.inflate(.zlib)
            if case .failed(let error, producedOutput: false) = wrapped,
               error.message != ContentDecodingError.unexpectedEndOfInput {
                var retry = LayerRun(name: step.name, input: bytes, inputTruncated: inputTruncated,
                                     output: BoundedOutput(limit: maxOutputBytes), scratch: scratch)
                if case .finished(let layer) = retry.inflate(.raw) { return .success(layer) }
            }
            return wrapped.result
        case .brotli:
            return run.unbrotli().result
        case .zstd:
            return run.unzstd().result
        }
    }

    /// RFC 1950: method 8 (deflate), window ≤ 32 KiB, header checksum a multiple of 31.
    static func startsWithZlibHeader(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= 2 else { return false }
        let cmf = bytes[0], flg = bytes[1]
        return cmf & 0x0f == 8 && cmf >> 4 <= 7 && (UInt16(cmf) << 8 | UInt16(flg)) % 31 == 0
    }
}

// Streaming machinery, nested so its names cannot clash with the rest of the target.
extension ContentDecoder {
    /// Collects output up to `limit`, growing its storage geometrically but never
    /// past `limit`, so a bomb cannot make it allocate more than it may keep.
    struct BoundedOutput {
        let limit: Int
        private(set) var bytes: [UInt8] = []
        private(set) var reachedLimit = false

        init(limit: Int) { self.limit = limit }

        /// Room for the next library call: one byte more than may be kept, so that
        /// output beyond the limit is seen (and the result marked truncated) without
        /// producing a whole extra chunk.
        var nextChunkCapacity: Int {
            let room = limit - bytes.count
            return room >= ContentDecoder.outputChunkSize ? ContentDecoder.outputChunkSize : room + 1
        }

        mutating func append(_ chunk: UnsafeBufferPointer<UInt8>) {
            let room = limit - bytes.count
            let kept = Swift.min(chunk.count, room)
            if kept > 0 {
                let needed = bytes.count + kept
                if needed > bytes.capacity {
                    let doubled = bytes.capacity >= limit / 2 ? limit : bytes.capacity * 2
                    bytes.reserveCapacity(Swift.min(limit, Swift.max(needed, doubled)))
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[0..<kept]))
            }
            if chunk.count > room { reachedLimit = true }
        }
    }

    /// How one library run over one layer ended.
    enum LayerOutcome {
        case finished(Layer)
        case failed(ContentDecodingError, producedOutput: Bool)

        var result: Result<Layer, ContentDecodingError> {
            switch self {
            case .finished(let layer): return .success(layer)
            case .failed(let error, _): return .failure(error)
            }
        }
    }

    enum ZlibFormat {
        case gzip, zlib, raw

        var windowBits: Int32 {
            switch self {
            case .gzip: return 15 + 16
            case .zlib: return 15
            case .raw: return -15
            }
        }
    }

    /// One pass of one library over one layer's input.
    struct LayerRun {
        let name: String
        let input: UnsafeBufferPointer<UInt8>
        let inputTruncated: Bool
        var output: BoundedOutput
        let scratch: UnsafeMutableBufferPointer<UInt8>

        private var boundedResult: LayerOutcome {
            .finished(Layer(bytes: output.bytes, truncated: true))
        }

        private var completeResult: LayerOutcome {
            .finished(Layer(bytes: output.bytes, truncated: inputTruncated))
        }

        private var prematureEnd: LayerOutcome {
            if inputTruncated { return .finished(Layer(bytes: output.bytes, truncated: true)) }
            return failure(ContentDecodingError.unexpectedEndOfInput)
        }

        private func failure(_ message: String) -> LayerOutcome {
            .failed(.corrupt(coding: name, message: message), producedOutput: !output.bytes.isEmpty)
        }

        private mutating func keep(_ count: Int) {
            output.append(UnsafeBufferPointer(rebasing: scratch[0..<count]))
        }

        // MARK: zlib (gzip, deflate)

        mutating func inflate(_ format: ZlibFormat) -> LayerOutcome {
            guard let inputBase = input.baseAddress, let scratchBase = scratch.baseAddress else {
                return completeResult
            }
            var stream = z_stream()
            let initStatus = inflateInit2_(&stream, format.windowBits, zlibVersion(),
                                           Int32(MemoryLayout<z_stream>.size))
            guard initStatus == Z_OK else { return failure(Self.zlibMessage(stream, initStatus)) }
            defer { inflateEnd(&stream) }

            // avail_in is 32-bit: hand the input over in slices.
            var handedOver = 0
            while true {
                if stream.avail_in == 0 && handedOver < input.count {
                    let slice = Swift.min(input.count - handedOver, Int(UInt32.max))
                    stream.next_in = UnsafeMutablePointer(mutating: inputBase + handedOver)
                    stream.avail_in = UInt32(slice)
                    handedOver += slice
                }
                let capacity = output.nextChunkCapacity
                stream.next_out = scratchBase
                stream.avail_out = UInt32(capacity)
                let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                keep(capacity - Int(stream.avail_out))
                if output.reachedLimit { return boundedResult }
                let consumed = handedOver - Int(stream.avail_in)

                switch status {
                case Z_OK:
                    continue
                case Z_STREAM_END:
                    let rest = input.count - consumed
                    if format == .gzip, rest >= 2, input[consumed] == 0x1f, input[consumed + 1] == 0x8b {
                        // Concatenated members form one gzip file (RFC 1952 §2.2).
                        inflateReset(&stream)
                        continue
                    }
                    return completeResult
                case Z_BUF_ERROR where consumed == input.count:
                    return prematureEnd
                case Z_NEED_DICT:
                    return failure("stream needs a preset dictionary")
                default:
                    return failure(Self.zlibMessage(stream, status))
                }
            }
        }

        private static func zlibMessage(_ stream: z_stream, _ status: Int32) -> String {
            if let message = stream.msg { return String(cString: message) }
            switch status {
            case Z_MEM_ERROR: return "insufficient memory"
            case Z_BUF_ERROR: return "no progress possible"
            case Z_VERSION_ERROR: return "incompatible zlib version"
            default: return "zlib error \(status)"
            }
        }

        // MARK: brotli

        mutating func unbrotli() -> LayerOutcome {
            guard let scratchBase = scratch.baseAddress else { return completeResult }
            guard let state = BrotliDecoderCreateInstance(nil, nil, nil) else {
                return failure("could not allocate a brotli decoder")
            }
            defer { BrotliDecoderDestroyInstance(state) }

            var availableIn = input.count
            var nextIn = input.baseAddress
            while true {
                let capacity = output.nextChunkCapacity
                var availableOut = capacity
                var nextOut: UnsafeMutablePointer<UInt8>? = scratchBase
                let status = BrotliDecoderDecompressStream(state, &availableIn, &nextIn,
                                                           &availableOut, &nextOut, nil)
                keep(capacity - availableOut)
                if output.reachedLimit { return boundedResult }

                switch status {
                case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                    continue
                case BROTLI_DECODER_RESULT_SUCCESS:
                    return completeResult
                case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                    return prematureEnd
                default:
                    let code = BrotliDecoderGetErrorCode(state)
                    guard let text = BrotliDecoderErrorString(code) else {
                        return failure("brotli error \(code.rawValue)")
                    }
                    return failure(String(cString: text))
                }
            }
        }

        // MARK: zstd

        mutating func unzstd() -> LayerOutcome {
            guard let scratchBase = scratch.baseAddress else { return completeResult }
            guard let context = ZSTD_createDCtx() else {
                return failure("could not allocate a zstd decoder")
            }
            defer { ZSTD_freeDCtx(context) }
            // RFC 9659 §3: `zstd` content uses windows of at most 8 MiB, and a larger
            // one may be refused. Refusing keeps a hostile frame header from making
            // the library allocate a 128 MiB window (its default ceiling).
            ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, ContentDecoder.zstdWindowLogMax)

            var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
            var idleCalls = 0
            while true {
                let capacity = output.nextChunkCapacity
                var destination = ZSTD_outBuffer(dst: scratchBase, size: capacity, pos: 0)
                let positionBefore = source.pos
                // 0: a frame is complete and flushed; ZSTD_decompressStream then starts
                // on the next frame if input remains.
                let hint = ZSTD_decompressStream(context, &destination, &source)
                if ZSTD_isError(hint) != 0 {
                    guard let text = ZSTD_getErrorName(hint) else { return failure("zstd error") }
                    return failure(String(cString: text))
                }
                keep(destination.pos)
                if output.reachedLimit { return boundedResult }

                if source.pos == source.size {
                    if hint == 0 { return completeResult }
                    // Output space was left over, so everything decodable was flushed.
                    if destination.pos < destination.size { return prematureEnd }
                }
                idleCalls = source.pos == positionBefore && destination.pos == 0 ? idleCalls + 1 : 0
                if idleCalls > 1 { return failure("zstd decoder made no progress") }
            }
        }
    }
}

private extension Substring {
    /// HTTP's optional whitespace (RFC 9110 §5.6.3) is spaces and tabs only.
    func trimmingSpacesAndTabs() -> Substring {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isOWS($0) }),
              let last = lastIndex(where: { !isOWS($0) }) else { return self[endIndex...] }
        return self[start...last]
    }
}
