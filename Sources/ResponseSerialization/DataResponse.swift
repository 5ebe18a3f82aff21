import Foundation
import HTTP1

/// What a plain `response { }` handler receives: the exchange as captured, no serializer ran.
public struct DefaultDataResponse: Sendable {
    /// The request head as the client sent it.
    public let request: HTTPRequestHead?
    /// The response head as the origin sent it; nil when none arrived.
    public let response: HTTPResponseHead?
    /// The body after content decoding (nil when none was received).
    public let data: Data?
    /// The transport or validation failure, if any.
    public let error: Error?
    /// When the exchange's points were reached, and the durations between them.
    public let timeline: Timeline
    /// Where the upstream exchange's time went; nil when not measured.
    public let metrics: ExchangeMetrics?

    /// - Parameters:
    ///   - request: The request head.
    ///   - response: The response head, nil when none arrived.
    ///   - data: The body after content decoding, nil when none was received.
    ///   - error: The transport or validation failure, if any.
    ///   - timeline: Defaults to a timeline whose points are all 0.
    ///   - metrics: Defaults to nil (not measured).
    public init(request: HTTPRequestHead?, response: HTTPResponseHead?, data: Data?, error: Error?,
                timeline: Timeline = Timeline(), metrics: ExchangeMetrics? = nil) {
        self.request = request; self.response = response; self.data = data; self.error = error
        self.timeline = timeline; self.metrics = metrics
    }
}

/// The exchange plus the outcome of one serializer, as Alamofire's `DataResponse`:
/// what `CompletedExchange.response(queue:responseSerializer:completionHandler:)` and
/// `serialize(with:)` hand back.
public struct DataResponse<Value> {
    /// The request head as the client sent it.
    public let request: HTTPRequestHead?
    /// The response head as the origin sent it; nil when none arrived.
    public let response: HTTPResponseHead?
    /// The body the serializer read (after content decoding); nil when none was received.
    public let data: Data?
    /// The serializer's value, or the error it returned (a transport, validation or
    /// serialization failure).
    public let result: Result<Value, Error>
    /// When the exchange's points were reached, `serializationCompletedTime` stamped right
    /// after the serializer returned.
    public let timeline: Timeline
    /// Where the upstream exchange's time went; nil when not measured.
    public let metrics: ExchangeMetrics?

    /// - Parameters:
    ///   - request: The request head.
    ///   - response: The response head, nil when none arrived.
    ///   - data: The body the serializer read, nil when none was received.
    ///   - result: The serializer's outcome.
    ///   - timeline: Defaults to a timeline whose points are all 0.
    ///   - metrics: Defaults to nil (not measured).
    public init(request: HTTPRequestHead?, response: HTTPResponseHead?, data: Data?,
                result: Result<Value, Error>, timeline: Timeline = Timeline(), metrics: ExchangeMetrics? = nil) {
        self.request = request; self.response = response; self.data = data; self.result = result
        self.timeline = timeline; self.metrics = metrics
    }

    /// The value when `result` is a success, else nil.
    public var value: Value? {
        if case .success(let value) = result { return value }
        return nil
    }

    /// The error when `result` is a failure, else nil.
    public var error: Error? {
        if case .failure(let error) = result { return error }
        return nil
    }

    /// Transforms a successful value; every other field is kept.
    /// - Parameter transform: Applied to the value of a success; a failure is kept as it is.
    public func map<T>(_ transform: (Value) -> T) -> DataResponse<T> {
        replacingResult(result.map(transform))
    }

    /// Transforms a successful value with a closure that may throw; a thrown error becomes the failure.
    /// - Parameter transform: Applied to the value of a success; a failure is kept as it is.
    public func flatMap<T>(_ transform: (Value) throws -> T) -> DataResponse<T> {
        switch result {
        case .success(let value):
            do { return replacingResult(.success(try transform(value))) } catch { return replacingResult(.failure(error)) }
        case .failure(let error):
            return replacingResult(.failure(error))
        }
    }

    /// Transforms a failure's error; every other field is kept.
    /// - Parameter transform: Applied to the error of a failure; a success is kept as it is.
    public func mapError<E: Error>(_ transform: (Error) -> E) -> DataResponse<Value> {
        replacingResult(result.mapError { transform($0) as Error })
    }

    private func replacingResult<T>(_ newResult: Result<T, Error>) -> DataResponse<T> {
        DataResponse<T>(request: request, response: response, data: data, result: newResult,
                        timeline: timeline, metrics: metrics)
    }
}

extension DataResponse: Sendable where Value: Sendable {}

extension DataResponse: CustomStringConvertible {
    /// Alamofire's one-word form: "SUCCESS: value" or "FAILURE: message".
    public var description: String {
        switch result {
        case .success(let value): return "SUCCESS: \(value)"
        case .failure(let error): return "FAILURE: \(describe(error))"
        }
    }
}
