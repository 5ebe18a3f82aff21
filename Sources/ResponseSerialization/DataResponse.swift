import Foundation
import HTTP1

/// What a plain `response { }` handler receives: the exchange as captured, no serializer ran.
public struct DefaultDataResponse: Sendable {
    public let request: HTTPRequestHead?
    public let response: HTTPResponseHead?
    /// The body after content decoding (nil when none was received).
    public let data: Data?
    /// The transport or validation failure, if any.
    public let error: Error?
    public let timeline: Timeline
    public let metrics: ExchangeMetrics?

    public init(request: HTTPRequestHead?, response: HTTPResponseHead?, data: Data?, error: Error?,
                timeline: Timeline = Timeline(), metrics: ExchangeMetrics? = nil) {
        self.request = request; self.response = response; self.data = data; self.error = error
        self.timeline = timeline; self.metrics = metrics
    }
}

/// The exchange plus the outcome of one serializer.
public struct DataResponse<Value> {
    public let request: HTTPRequestHead?
    public let response: HTTPResponseHead?
    public let data: Data?
    public let result: Result<Value, Error>
    public let timeline: Timeline
    public let metrics: ExchangeMetrics?

    public init(request: HTTPRequestHead?, response: HTTPResponseHead?, data: Data?,
                result: Result<Value, Error>, timeline: Timeline = Timeline(), metrics: ExchangeMetrics? = nil) {
        self.request = request; self.response = response; self.data = data; self.result = result
        self.timeline = timeline; self.metrics = metrics
    }

    public var value: Value? {
        if case .success(let value) = result { return value }
        return nil
    }

    public var error: Error? {
        if case .failure(let error) = result { return error }
        return nil
    }

    /// Transforms a successful value; every other field is kept.
    public func map<T>(_ transform: (Value) -> T) -> DataResponse<T> {
        replacingResult(result.map(transform))
    }

    /// Transforms a successful value with a closure that may throw; a thrown error becomes the failure.
    public func flatMap<T>(_ transform: (Value) throws -> T) -> DataResponse<T> {
        switch result {
        case .success(let value):
            do { return replacingResult(.success(try transform(value))) } catch { return replacingResult(.failure(error)) }
        case .failure(let error):
            return replacingResult(.failure(error))
        }
    }

    /// Transforms a failure's error; every other field is kept.
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
