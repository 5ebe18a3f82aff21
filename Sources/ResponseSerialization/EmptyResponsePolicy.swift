import Foundation
import HTTP1

/// When an empty body is the right answer rather than a failure (check 2 of
/// every built-in). Version 5 rule: only when the body is nil or empty.
public struct EmptyResponsePolicy: Sendable, Equatable {
    /// 204 No Content, 205 Reset Content, 304 Not Modified, as Alamofire.
    public static let defaultCodes: Set<Int> = [204, 205, 304]
    /// HEAD, as Alamofire.
    public static let defaultMethods: Set<String> = ["HEAD"]

    /// Statuses whose empty body is the empty value.
    public var codes: Set<Int>
    /// Compared exactly: HTTP methods are case-sensitive.
    public var methods: Set<String>

    /// - Parameters:
    ///   - codes: Default 204, 205 and 304.
    ///   - methods: Default HEAD.
    public init(codes: Set<Int> = EmptyResponsePolicy.defaultCodes, methods: Set<String> = EmptyResponsePolicy.defaultMethods) {
        self.codes = codes; self.methods = methods
    }

    /// Alamofire 5's `emptyResponseAllowed(forRequest:response:)`: the request's method or
    /// the response's status is one the policy names.
    /// - Parameters:
    ///   - request: The request head, nil when there is none.
    ///   - response: The response head, nil when none arrived.
    public func allowsEmptyBody(request: HTTPRequestHead?, response: HTTPResponseHead?) -> Bool {
        allowsEmptyBody(method: request?.method, status: response?.status)
    }

    /// The same from the method and status alone.
    /// - Parameters:
    ///   - method: The request's method, nil when there is no request.
    ///   - status: The response's status, nil when none arrived.
    public func allowsEmptyBody(method: String?, status: Int?) -> Bool {
        if let method, methods.contains(method) { return true }
        if let status, codes.contains(status) { return true }
        return false
    }

    /// The order every built-in serializer follows, written once (Alamofire 5's, whose
    /// `emptyResponseAllowed` is `allowsEmptyBody` here): an error passed in is the result;
    /// then a nil or empty body the policy allows is `emptyValue`; then a nil body fails
    /// (`inputDataNil`, or `inputDataNilOrZeroLength` for a serializer that `requiresBytes`,
    /// which an empty body fails too); only then is the body parsed.
    /// - Parameters:
    ///   - method: The request's method, nil when there is no request.
    ///   - status: The response's status, nil when there is no response.
    ///   - body: The body's bytes, nil when none were received.
    ///   - error: The error the exchange hands the serializer.
    ///   - emptyValue: The value of an allowed empty response.
    ///   - requiresBytes: Whether an empty body, not allowed, fails rather than being parsed.
    ///   - parse: Reads the body.
    func result<Body: Collection, Value>(method: String?, status: Int?, body: Body?, error: Error?,
                                         emptyValue: @autoclosure () -> Value, requiresBytes: Bool,
                                         parse: (Body) -> Result<Value, Error>) -> Result<Value, Error> {
        if let error { return .failure(error) }
        if (body?.isEmpty ?? true) && allowsEmptyBody(method: method, status: status) { return .success(emptyValue()) }
        guard let body, !(requiresBytes && body.isEmpty) else {
            return .failure(serializationFailure(requiresBytes ? .inputDataNilOrZeroLength : .inputDataNil))
        }
        return parse(body)
    }

    /// `result(method:status:body:…)` for a serializer's four arguments.
    func result<Value>(_ request: HTTPRequestHead?, _ response: HTTPResponseHead?, _ data: Data?, _ error: Error?,
                       emptyValue: @autoclosure () -> Value, requiresBytes: Bool,
                       parse: (Data) -> Result<Value, Error>) -> Result<Value, Error> {
        result(method: request?.method, status: response?.status, body: data, error: error,
               emptyValue: emptyValue(), requiresBytes: requiresBytes, parse: parse)
    }
}
