import Foundation
import HTTP1

/// A validator's answer (Alamofire 4's shape).
public enum ValidationResult {
    /// The response passes.
    case success
    /// The response fails; the error becomes the exchange's.
    case failure(Error)
}

/// A validator: request, response, and the content-decoded body.
public typealias Validation = (HTTPRequestHead?, HTTPResponseHead, Data?) -> ValidationResult

/// A media type reduced to what matching needs. Parsing follows Alamofire:
/// trim white space, drop everything from the first `;` (parameters,
/// q-values), split on `/` (type = first part, subtype = last part). Both parts
/// are lower-cased, as media types are case-insensitive (RFC 9110 §8.3.1).
public struct MIMEType: Sendable, Hashable, CustomStringConvertible {
    /// The type, lower-cased (`application`, or `*`).
    public let type: String
    /// The subtype, lower-cased (`json`, or `*`).
    public let subtype: String

    /// nil for an empty or blank string.
    /// - Parameter string: A media type, with or without parameters (`text/html; charset=utf-8`).
    public init?(_ string: String) {
        let stripped = string.trimmingCharacters(in: .whitespacesAndNewlines)
        let essence = stripped[..<(stripped.firstIndex(of: ";") ?? stripped.endIndex)]
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard !essence.isEmpty else { return nil }
        let parts = essence.components(separatedBy: "/")
        guard let first = parts.first, let last = parts.last else { return nil }
        type = first
        subtype = last
    }

    /// `type/subtype`.
    public var description: String { "\(type)/\(subtype)" }
    /// `*/*`.
    public var isWildcard: Bool { type == "*" && subtype == "*" }

    /// Whether this (acceptable) pattern matches `mime`; wildcards count on this side only.
    /// - Parameter mime: The response's media type.
    public func matches(_ mime: MIMEType) -> Bool {
        if type == mime.type && subtype == mime.subtype { return true }
        if subtype == "*" && type == mime.type { return true }
        if type == "*" && subtype == mime.subtype { return true }
        return isWildcard
    }
}

/// The built-in validators, usable without an exchange (the log pipeline runs
/// them from config rules).
public enum ResponseValidation {
    /// Fails with `unacceptableStatusCode(actual)` unless the status is in `acceptable` (an empty set always fails).
    /// - Parameter acceptable: The statuses accepted, e.g. `200..<300`.
    public static func statusCode<S: Sequence>(_ acceptable: S) -> Validation where S.Element == Int {
        let codes = Set(acceptable)
        return { _, response, _ in
            if codes.contains(response.status) { return .success }
            return .failure(TapwireError.responseValidationFailed(reason: .unacceptableStatusCode(code: response.status)))
        }
    }

    /// Alamofire's content-type check: an empty body passes; a missing
    /// Content-Type passes only against `*/*`; otherwise some pattern must match.
    /// The acceptable list in an error is sorted.
    /// - Parameter acceptable: Media types such as `application/json`; `type/*` and `*/*` match as wildcards.
    public static func contentType<S: Sequence>(_ acceptable: S) -> Validation where S.Element == String {
        let patterns = Array(acceptable)
        return { _, response, data in
            guard let data, !data.isEmpty else { return .success }
            guard let responseType = responseMIMEType(response), let responseMIME = MIMEType(responseType) else {
                if patterns.contains(where: { MIMEType($0)?.isWildcard == true }) { return .success }
                return .failure(TapwireError.responseValidationFailed(
                    reason: .missingContentType(acceptableContentTypes: patterns.sorted())))
            }
            if patterns.contains(where: { MIMEType($0)?.matches(responseMIME) == true }) { return .success }
            return .failure(TapwireError.responseValidationFailed(
                reason: .unacceptableContentType(acceptableContentTypes: patterns.sorted(),
                                                 responseContentType: responseType)))
        }
    }

    /// The request's `Accept` header split on `,` (trimmed), or `["*/*"]` without one.
    /// - Parameter request: The request; nil counts as no Accept header.
    public static func acceptableContentTypes(of request: HTTPRequestHead?) -> [String] {
        guard let accept = request?.headers.first(name: "Accept") else { return ["*/*"] }
        return accept.components(separatedBy: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// The response's media type without parameters, lower-cased (what
    /// Foundation's `URLResponse.mimeType` gives Alamofire); nil when absent or blank.
    /// - Parameter response: The response.
    public static func responseMIMEType(_ response: HTTPResponseHead) -> String? {
        guard let value = response.headers.first(name: "Content-Type") else { return nil }
        let essence = value[..<(value.firstIndex(of: ";") ?? value.endIndex)]
            .trimmingCharacters(in: .whitespaces).lowercased()
        return essence.isEmpty ? nil : essence
    }
}
