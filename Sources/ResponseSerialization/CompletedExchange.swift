import Foundation
import HTTP1

/// How much of the response body was kept. `total` counts every body byte
/// upstream sent; `captured` those kept under the capture limit.
public struct BodyCapture: Sendable, Equatable {
    /// Bytes kept.
    public var captured: Int
    /// Bytes the origin sent.
    public var total: Int
    /// What was kept is not the whole body (the capture limit, or a transfer cut short).
    public var truncated: Bool

    /// - Parameters:
    ///   - captured: Bytes kept.
    ///   - total: Bytes the origin sent.
    ///   - truncated: Default nil: truncated when `captured < total`. A transfer cut short
    ///     passes true whatever the counts say.
    public init(captured: Int, total: Int, truncated: Bool? = nil) {
        self.captured = captured
        self.total = total
        self.truncated = truncated ?? (captured < total)
    }

    /// A body kept whole.
    /// - Parameter count: Its size in bytes.
    public static func whole(_ count: Int) -> BodyCapture { BodyCapture(captured: count, total: count, truncated: false) }

    /// What a serializer that needs the whole body gets instead of it: nil when it is whole.
    public var truncationError: Error? {
        truncated ? TapwireError.responseSerializationFailed(reason: .inputDataTruncated(captured: captured, total: total)) : nil
    }
}

/// One finished proxy exchange, seen the way Alamofire's `DataRequest` is seen
/// by its response handlers: validators and serializers are attached to it and
/// run over what was captured.
///
/// Validators run when attached (the exchange is already complete), in order,
/// each skipped when there is no response or an error is already set; the
/// first failure wins. A handler sees the validators attached before it, as
/// with Alamofire's suspended delegate queue. Asynchronous handlers run on a
/// serial queue of this exchange (targeting one shared concurrent pool) and are
/// delivered on the caller's queue in attach order.
public final class CompletedExchange: @unchecked Sendable {
    /// The pool every exchange's serialization queue targets.
    public static let serializationPool = DispatchQueue(label: "tapwire.serialization", qos: .utility,
                                                        attributes: .concurrent)

    /// The request head as the client sent it.
    public let request: HTTPRequestHead
    /// The response head as the origin sent it; nil when none arrived.
    public let response: HTTPResponseHead?
    /// The body after content decoding; nil when none was received.
    public let data: Data?
    /// How much of the body was kept: a serializer that needs it whole is refused a cut one.
    public let capture: BodyCapture
    /// Where the upstream exchange's time went; nil when not measured.
    public let metrics: ExchangeMetrics?
    /// `Timeline.requestStartTime`, seconds since 1970.
    public let requestStartTime: TimeInterval
    /// `Timeline.initialResponseTime` (0: no byte arrived).
    public let initialResponseTime: TimeInterval
    /// `Timeline.requestCompletedTime`.
    public let requestCompletedTime: TimeInterval

    private let transportError: Error?
    private let clock: @Sendable () -> TimeInterval
    /// Guards `validationError` and `queue`. A spin lock on an atomic flag: every logged
    /// exchange makes one of these objects, and an NSLock's allocation, mutex set-up and
    /// tear-down cost more than all its uncontended uses (handlers run on one serial queue,
    /// the pipeline uses it from one thread). Atomics, unlike `Synchronization.Mutex` on
    /// Linux, are visible to the thread sanitizer.
    private let lock = SpinLock()
    private var validationError: Error?
    private var queue: DispatchQueue?

    /// - Parameters:
    ///   - request: The request head.
    ///   - response: The response head, nil when none arrived.
    ///   - data: The body after content decoding, nil when none was received.
    ///   - error: The transport failure (or `contentDecodingFailed`), if any; default nil.
    ///   - capture: Default nil: `data` kept whole.
    ///   - requestStartTime: Seconds since 1970.
    ///   - initialResponseTime: Default 0: no byte arrived (the timeline uses `requestCompletedTime`).
    ///   - requestCompletedTime: Seconds since 1970.
    ///   - metrics: Default nil (not measured).
    ///   - clock: The exchange's clock, seconds since 1970; stamps serializationCompletedTime.
    ///     Default: the wall clock.
    public init(request: HTTPRequestHead, response: HTTPResponseHead?, data: Data?, error: Error? = nil,
                capture: BodyCapture? = nil,
                requestStartTime: TimeInterval, initialResponseTime: TimeInterval = 0,
                requestCompletedTime: TimeInterval, metrics: ExchangeMetrics? = nil,
                clock: @escaping @Sendable () -> TimeInterval = { Date().timeIntervalSince1970 }) {
        self.request = request
        self.response = response
        self.data = data
        self.transportError = error
        self.capture = capture ?? .whole(data?.count ?? 0)
        self.requestStartTime = requestStartTime
        self.initialResponseTime = initialResponseTime
        self.requestCompletedTime = requestCompletedTime
        self.metrics = metrics
        self.clock = clock
    }

    /// The transport failure, else the first validation failure.
    public var error: Error? {
        lock.lock(); defer { lock.unlock() }
        return transportError ?? validationError
    }

    // MARK: Validation

    /// Runs `validation` now unless there is no response or an error is set. A
    /// failure that is not a `TapwireError` is wrapped in `customValidationFailed`,
    /// so the log can name it.
    /// - Parameter validation: Given the request, the response and the data; its failure
    ///   becomes the exchange's error unless an earlier one is set.
    /// - Returns: This exchange, to chain validators and handlers.
    @discardableResult
    public func validate(_ validation: @escaping Validation) -> Self {
        guard let response, error == nil else { return self }
        // Run outside the lock: a validator may read this exchange.
        if case .failure(let failure) = validation(request, response, data) {
            let wrapped: Error = failure is TapwireError
                ? failure
                : TapwireError.responseValidationFailed(reason: .customValidationFailed(error: failure))
            lock.lock()
            if validationError == nil { validationError = wrapped }
            lock.unlock()
        }
        return self
    }

    /// Fails with `unacceptableStatusCode` unless the response's status is in the list.
    /// - Parameter acceptableStatusCodes: The statuses accepted, e.g. `200..<300`.
    /// - Returns: This exchange.
    @discardableResult
    public func validate<S: Sequence>(statusCode acceptableStatusCodes: S) -> Self where S.Element == Int {
        validate(ResponseValidation.statusCode(acceptableStatusCodes))
    }

    /// Alamofire's content-type check: an empty body passes; a missing Content-Type passes
    /// only against `*/*` (else `missingContentType`); otherwise some pattern must match
    /// (else `unacceptableContentType`), `type/*` and `*/*` as wildcards.
    /// - Parameter acceptableContentTypes: Media types such as `application/json`.
    /// - Returns: This exchange.
    @discardableResult
    public func validate<S: Sequence>(contentType acceptableContentTypes: S) -> Self where S.Element == String {
        validate(ResponseValidation.contentType(acceptableContentTypes))
    }

    /// Status 200..<300, then the content types of the request's Accept header (`*/*` without one).
    /// - Returns: This exchange.
    @discardableResult
    public func validate() -> Self {
        validate(statusCode: 200..<300)
        return validate(contentType: ResponseValidation.acceptableContentTypes(of: request))
    }

    // MARK: Synchronous (the proxy pipeline, already on a pool thread)

    /// The exchange with no serializer; serializationCompletedTime is now.
    public func defaultResponse() -> DefaultDataResponse {
        makeDefaultResponse(error: error)
    }

    /// Runs `serializer` here and now, stamping serializationCompletedTime right after it returns.
    /// - Parameter serializer: Handed the exchange's error (transport, else validation, else
    ///   `inputDataTruncated` for a cut body it does not accept), as Alamofire's are.
    /// - Returns: The exchange and the serializer's result.
    public func serialize<S: DataResponseSerializerProtocol>(with serializer: S) -> DataResponse<S.SerializedObject> {
        serialize(with: serializer, error: errorFor(serializer))
    }

    // MARK: Asynchronous (Alamofire's handlers)

    /// Alamofire's plain handler: the exchange as captured, no serializer. Made on this
    /// exchange's serialization queue, delivered on `queue`, in the order handlers were attached.
    /// - Parameters:
    ///   - queue: Where `completionHandler` runs; default the main queue.
    ///   - completionHandler: Given the exchange with the validators' verdict so far.
    /// - Returns: This exchange, to chain more handlers.
    @discardableResult
    public func response(queue: DispatchQueue = .main,
                         completionHandler: @escaping (DefaultDataResponse) -> Void) -> Self {
        let error = self.error
        serializationQueue().async {
            let response = self.makeDefaultResponse(error: error)
            queue.async { completionHandler(response) }
        }
        return self
    }

    /// Runs `responseSerializer` on this exchange's serialization queue (off the caller's
    /// thread) and delivers the response on `queue`, in the order handlers were attached.
    /// The serializer sees the validators attached before this call.
    /// - Parameters:
    ///   - queue: Where `completionHandler` runs; default the main queue.
    ///   - responseSerializer: A built-in (`.json()`, `.string()`, …) or your own.
    ///   - completionHandler: Given the exchange and the serializer's result.
    /// - Returns: This exchange, to chain more handlers.
    @discardableResult
    public func response<S: DataResponseSerializerProtocol>(
        queue: DispatchQueue = .main, responseSerializer: S,
        completionHandler: @escaping (DataResponse<S.SerializedObject>) -> Void) -> Self {
        let error = errorFor(responseSerializer)
        serializationQueue().async {
            let response = self.serialize(with: responseSerializer, error: error)
            queue.async { completionHandler(response) }
        }
        return self
    }

    /// `response(queue:responseSerializer: .data())`.
    /// - Parameters:
    ///   - queue: Where `completionHandler` runs; default the main queue.
    ///   - completionHandler: Given the body's bytes, or the failure.
    /// - Returns: This exchange.
    @discardableResult
    public func responseData(queue: DispatchQueue = .main,
                             completionHandler: @escaping (DataResponse<Data>) -> Void) -> Self {
        response(queue: queue, responseSerializer: .data(), completionHandler: completionHandler)
    }

    /// `response(queue:responseSerializer: .string(encoding:))`.
    /// - Parameters:
    ///   - queue: Where `completionHandler` runs; default the main queue.
    ///   - encoding: Default nil: the Content-Type's charset, else ISO-8859-1.
    ///   - completionHandler: Given the text, or the failure.
    /// - Returns: This exchange.
    @discardableResult
    public func responseString(queue: DispatchQueue = .main, encoding: Charset? = nil,
                               completionHandler: @escaping (DataResponse<String>) -> Void) -> Self {
        response(queue: queue, responseSerializer: .string(encoding: encoding), completionHandler: completionHandler)
    }

    /// `response(queue:responseSerializer: .json(allowFragments:))`.
    /// - Parameters:
    ///   - queue: Where `completionHandler` runs; default the main queue.
    ///   - allowFragments: Accept a scalar at top level; default true, as Alamofire.
    ///   - completionHandler: Given the JSON value, or the failure.
    /// - Returns: This exchange.
    @discardableResult
    public func responseJSON(queue: DispatchQueue = .main, allowFragments: Bool = true,
                             completionHandler: @escaping (DataResponse<JSON>) -> Void) -> Self {
        response(queue: queue, responseSerializer: .json(allowFragments: allowFragments),
                 completionHandler: completionHandler)
    }

    /// `response(queue:responseSerializer: .propertyList())`.
    /// - Parameters:
    ///   - queue: Where `completionHandler` runs; default the main queue.
    ///   - completionHandler: Given the property list as JSON, or the failure.
    /// - Returns: This exchange.
    @discardableResult
    public func responsePropertyList(queue: DispatchQueue = .main,
                                     completionHandler: @escaping (DataResponse<JSON>) -> Void) -> Self {
        response(queue: queue, responseSerializer: .propertyList(), completionHandler: completionHandler)
    }

    // MARK: Internals

    private func errorFor<S: DataResponseSerializerProtocol>(_ serializer: S) -> Error? {
        CompletedExchange.serializerError(error, capture: capture, acceptsTruncatedInput: serializer.acceptsTruncatedInput)
    }

    /// The error a serializer is handed, written once for the exchange and for callers that
    /// serialize without one (the log's compact path): the exchange's own (transport, else
    /// validation), else `inputDataTruncated` when the body was cut and the serializer
    /// needs it whole.
    /// - Parameters:
    ///   - exchangeError: The transport failure, else the first validation failure.
    ///   - capture: How much of the body was kept.
    ///   - acceptsTruncatedInput: Whether the serializer takes a cut body.
    public static func serializerError(_ exchangeError: Error?, capture: BodyCapture,
                                       acceptsTruncatedInput: Bool) -> Error? {
        if let exchangeError { return exchangeError }
        return acceptsTruncatedInput ? nil : capture.truncationError
    }

    private func serialize<S: DataResponseSerializerProtocol>(with serializer: S, error: Error?) -> DataResponse<S.SerializedObject> {
        // A cut body reaches a serializer here only when it accepts one (`errorFor`).
        let result = capture.truncated ? serializer.serializeCapturedPrefix(request, response, data, error)
                                       : serializer.serializeResponse(request, response, data, error)
        return DataResponse(request: request, response: response, data: data, result: result,
                            timeline: timeline(serializationCompletedTime: stamp()), metrics: metrics)
    }

    private func makeDefaultResponse(error: Error?) -> DefaultDataResponse {
        DefaultDataResponse(request: request, response: response, data: data, error: error,
                            timeline: timeline(serializationCompletedTime: stamp()), metrics: metrics)
    }

    /// Never before requestCompletedTime, so durations stay non-negative even if the clock steps back.
    private func stamp() -> TimeInterval { max(clock(), requestCompletedTime) }

    private func timeline(serializationCompletedTime: TimeInterval) -> Timeline {
        Timeline(requestStartTime: requestStartTime, initialResponseTime: initialResponseTime,
                 requestCompletedTime: requestCompletedTime, serializationCompletedTime: serializationCompletedTime)
    }

    private func serializationQueue() -> DispatchQueue {
        lock.lock(); defer { lock.unlock() }
        if let queue { return queue }
        let created = DispatchQueue(label: "tapwire.exchange.serialization", target: CompletedExchange.serializationPool)
        queue = created
        return created
    }
}
