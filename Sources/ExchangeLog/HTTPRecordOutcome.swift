import ResponseSerialization

/// Everything an `http` record says beyond the captured exchange itself; worked
/// out by `ExchangeProcessor`.
public struct HTTPRecordOutcome: Sendable {
    // `result` is declared first so that the synthesized memberwise initializer has a signature
    // of its own, for the public one below to delegate to (see `CapturedExchange`'s).
    public var result: RecordResult
    public var ruleName: String
    public var serializer: SerializerSpec.Kind
    public var timeline: Timeline
    public var metrics: ExchangeMetrics
    public var body: ResponseBodySummary
    /// The `response.mimeType` field.
    public var mimeType: String?
    /// The `response.charset` field.
    public var charset: String?
    /// nil when no request body was captured.
    public var requestBody: RequestBodyOutcome?
}

extension HTTPRecordOutcome {
    /// Delegates to the memberwise initializer, which is built in place: assigning the fields
    /// one by one would copy the outcome out and destroy the original, for every record.
    public init(ruleName: String, serializer: SerializerSpec.Kind, result: RecordResult, timeline: Timeline,
                metrics: ExchangeMetrics, body: ResponseBodySummary, mimeType: String?, charset: String?,
                requestBody: RequestBodyOutcome? = nil) {
        self.init(result: result, ruleName: ruleName, serializer: serializer, timeline: timeline, metrics: metrics,
                  body: body, mimeType: mimeType, charset: charset, requestBody: requestBody)
    }
}
