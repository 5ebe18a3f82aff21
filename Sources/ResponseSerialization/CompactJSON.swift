/// A JSON body as the compact text the log writes, validated and written in one pass
/// (`JSONCompactor`), with `redactingKeys` applied at any depth. The same value as
/// `json(...)` followed by `JSONWriter`, for a log that needs no `JSON` tree.
public struct CompactJSON: Sendable, Equatable {
    /// The value as compact JSON text (UTF-8, no white space outside strings).
    public var text: [UInt8]
    /// - Parameter text: Compact JSON text.
    public init(text: [UInt8]) { self.text = text }
}

extension CompactJSON {
    /// The `compactJSON` serializer's steps on a body's bytes (nil: no data), for callers
    /// that hold bytes rather than the heads and a `Data` (the log's workers, which skip
    /// the exchange objects for the common record: see `ExchangeProcessor.outcome`).
    /// - Parameters:
    ///   - method: The request's method, nil when there is no request.
    ///   - status: The response's status, nil when none arrived.
    ///   - body: The body's bytes, nil when none were received.
    ///   - error: The exchange's error; when set it is the result.
    ///   - allowFragments: Accept a scalar at top level.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    ///   - keys: Member names whose values are written as `"[redacted]"` at any depth.
    ///   - policy: When an empty body is `null` rather than a failure.
    public static func serialize(method: String?, status: Int?, body: UnsafeRawBufferPointer?, error: Error?,
                                 allowFragments: Bool, maxDepth: Int = 512, redactingKeys keys: JSONKeySet,
                                 policy: EmptyResponsePolicy) -> Result<CompactJSON, Error> {
        var storage: [UInt8] = []
        return serialize(method: method, status: status, body: body, error: error, allowFragments: allowFragments,
                         maxDepth: maxDepth, redactingKeys: keys, policy: policy, reusing: &storage)
    }

    /// The same, writing the text into `storage`'s memory (emptied before the text is written)
    /// and sharing it with the result: a caller that lets go of each result before the next
    /// call (a log worker, record after record) allocates no array per body.
    /// - Parameter storage: Memory to reuse; its contents are replaced.
    public static func serialize(method: String?, status: Int?, body: UnsafeRawBufferPointer?, error: Error?,
                                 allowFragments: Bool, maxDepth: Int = 512, redactingKeys keys: JSONKeySet,
                                 policy: EmptyResponsePolicy, reusing storage: inout [UInt8]) -> Result<CompactJSON, Error> {
        policy.result(method: method, status: status, body: body, error: error,
                      emptyValue: CompactJSON(text: Array("null".utf8)), requiresBytes: true) { bytes in
            storage.removeAll(keepingCapacity: true)
            storage.reserveCapacity(bytes.count + 16)
            if JSONCompactor.append(bytes, allowFragments: allowFragments, maxDepth: maxDepth, redacting: keys, into: &storage) {
                return .success(CompactJSON(text: storage))
            }
            // Invalid (or refused by the one-pass check): the parser says why, or, should
            // it accept what the pass refused, its tree gives the text.
            do {
                let value = try JSONParser.parse(bytes, allowFragments: allowFragments, maxDepth: maxDepth)
                storage.removeAll(keepingCapacity: true)
                JSONWriter.write(keys.redacting(value), into: &storage)
                return .success(CompactJSON(text: storage))
            } catch {
                return .failure(serializationFailure(.jsonSerializationFailed(error: error)))
            }
        }
    }
}
