import Foundation
import HTTP1

/// Every failure an exchange can end with, shaped like Alamofire's `AFError` so
/// that the log's `result.failure` reads like a client's error: a stable error
/// name, a stable reason name, and a readable message.
public enum TapwireError: Error {
    case responseSerializationFailed(reason: ResponseSerializationFailureReason)
    case responseValidationFailed(reason: ResponseValidationFailureReason)
    /// The exchange itself failed (connect, DNS, timeout, reset, ...); there may be no response.
    case transportFailed(TransportFailure)

    public enum ResponseSerializationFailureReason {
        case inputDataNil
        case inputDataNilOrZeroLength
        /// `encoding` is the canonical IANA name of the charset tried, e.g. "utf-8".
        case stringSerializationFailed(encoding: String)
        case jsonSerializationFailed(error: Error)
        case propertyListSerializationFailed(error: Error)
        case customSerializationFailed(error: Error)
        /// Tapwire: the body was cut at the capture limit, so a whole-document parse would lie.
        case inputDataTruncated(captured: Int, total: Int)
        /// Tapwire: undoing Content-Encoding failed before any serializer ran.
        case contentDecodingFailed(encoding: String, message: String)
    }

    public enum ResponseValidationFailureReason {
        case unacceptableStatusCode(code: Int)
        case unacceptableContentType(acceptableContentTypes: [String], responseContentType: String)
        case missingContentType(acceptableContentTypes: [String])
        case customValidationFailed(error: Error)
    }
}

/// A transport failure: a code that never changes (scripts filter on it) and a
/// message for people: the engine's `TransportError`, named for the
/// `TapwireError.transportFailed` case that carries it.
public typealias TransportFailure = TransportError

extension TapwireError {
    /// "responseSerializationFailed", "responseValidationFailed" or "transportFailed".
    public var errorName: String {
        switch self {
        case .responseSerializationFailed: return "responseSerializationFailed"
        case .responseValidationFailed: return "responseValidationFailed"
        case .transportFailed: return "transportFailed"
        }
    }

    /// The reason's case name ("jsonSerializationFailed"); for transport failures the code.
    public var reasonName: String {
        switch self {
        case .responseSerializationFailed(let reason): return reason.name
        case .responseValidationFailed(let reason): return reason.name
        case .transportFailed(let failure): return failure.code.rawValue
        }
    }

    public var message: String {
        switch self {
        case .responseSerializationFailed(let reason): return reason.message
        case .responseValidationFailed(let reason): return reason.message
        case .transportFailed(let failure): return failure.message
        }
    }

    public var transportFailure: TransportFailure? {
        if case .transportFailed(let failure) = self { return failure }
        return nil
    }

    /// The error a serialization reason carried, if any.
    public var underlyingError: Error? {
        switch self {
        case .responseSerializationFailed(.jsonSerializationFailed(let e)),
             .responseSerializationFailed(.propertyListSerializationFailed(let e)),
             .responseSerializationFailed(.customSerializationFailed(let e)),
             .responseValidationFailed(.customValidationFailed(let e)):
            return e
        default:
            return nil
        }
    }
}

extension TapwireError.ResponseSerializationFailureReason {
    public var name: String {
        switch self {
        case .inputDataNil: return "inputDataNil"
        case .inputDataNilOrZeroLength: return "inputDataNilOrZeroLength"
        case .stringSerializationFailed: return "stringSerializationFailed"
        case .jsonSerializationFailed: return "jsonSerializationFailed"
        case .propertyListSerializationFailed: return "propertyListSerializationFailed"
        case .customSerializationFailed: return "customSerializationFailed"
        case .inputDataTruncated: return "inputDataTruncated"
        case .contentDecodingFailed: return "contentDecodingFailed"
        }
    }

    public var message: String {
        switch self {
        case .inputDataNil:
            return "Response could not be serialized, input data was nil."
        case .inputDataNilOrZeroLength:
            return "Response could not be serialized, input data was nil or zero length."
        case .stringSerializationFailed(let encoding):
            return "String could not be serialized with encoding: \(encoding)."
        case .jsonSerializationFailed(let error):
            return "JSON could not be serialized because of error:\n\(describe(error))"
        case .propertyListSerializationFailed(let error):
            return "PropertyList could not be serialized because of error:\n\(describe(error))"
        case .customSerializationFailed(let error):
            return "Custom response serializer failed with error:\n\(describe(error))"
        case .inputDataTruncated(let captured, let total) where captured >= total:
            // Every byte that came was captured: the transfer was cut, or decoding stopped.
            return "Response could not be serialized, input data was truncated: the transfer was cut after \(captured) bytes, or they decode past the decode limit."
        case .inputDataTruncated(let captured, let total):
            return "Response could not be serialized, input data was truncated at the capture limit: captured \(captured) of \(total) bytes."
        case .contentDecodingFailed(let encoding, let message):
            return "Content-Encoding \"\(encoding)\" could not be decoded because of error:\n\(message)"
        }
    }
}

extension TapwireError.ResponseValidationFailureReason {
    public var name: String {
        switch self {
        case .unacceptableStatusCode: return "unacceptableStatusCode"
        case .unacceptableContentType: return "unacceptableContentType"
        case .missingContentType: return "missingContentType"
        case .customValidationFailed: return "customValidationFailed"
        }
    }

    public var message: String {
        switch self {
        case .unacceptableStatusCode(let code):
            return "Response status code was unacceptable: \(code)."
        case .unacceptableContentType(let acceptable, let responseType):
            return "Response Content-Type \"\(responseType)\" does not match any acceptable types: \(acceptable.joined(separator: ", "))."
        case .missingContentType(let acceptable):
            return "Response Content-Type was missing and acceptable content types (\(acceptable.joined(separator: ", "))) do not match \"*/*\"."
        case .customValidationFailed(let error):
            return "Custom response validation failed with error: \(describe(error))"
        }
    }
}

extension TapwireError: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { message }
    public var description: String { message }
}

/// The three strings a log record stores for any failure. Errors that are not a
/// `TapwireError` (a custom serializer's own error) are named by their type.
public struct ErrorLogFields: Sendable, Equatable {
    public var error: String
    public var reason: String?
    public var message: String

    public init(error: String, reason: String?, message: String) {
        self.error = error; self.reason = reason; self.message = message
    }

    public init(_ error: Error) {
        if let tapwire = error as? TapwireError {
            self.init(error: tapwire.errorName, reason: tapwire.reasonName, message: tapwire.message)
        } else if let failure = error as? TransportFailure {
            self.init(error: "transportFailed", reason: failure.code.rawValue, message: failure.message)
        } else {
            self.init(error: String(describing: type(of: error)), reason: nil, message: describe(error))
        }
    }
}

/// The most useful text for an error: its own description when it has one;
/// for Foundation's NSError the debug description, which names the line at fault
/// where `localizedDescription` only says "not in the correct format".
func describe(_ error: Error) -> String {
    if let localized = error as? LocalizedError, let text = localized.errorDescription { return text }
    // Checked on the dynamic type: on Darwin every Swift error bridges with `is NSError`.
    let isFoundationError = type(of: error) is NSError.Type
    if !isFoundationError, type(of: error) is CustomStringConvertible.Type {
        return String(describing: error)
    }
    let ns = error as NSError
    if let debug = ns.userInfo[NSDebugDescriptionErrorKey] as? String, !debug.isEmpty { return debug }
    return ns.localizedDescription
}
