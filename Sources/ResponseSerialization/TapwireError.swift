import Foundation
import HTTP1

/// Every failure an exchange can end with, shaped like Alamofire's `AFError` so
/// that the log's `result.failure` reads like a client's error: a stable error
/// name, a stable reason name, and a readable message.
public enum TapwireError: Error {
    /// A serializer could not turn the body into its value.
    case responseSerializationFailed(reason: ResponseSerializationFailureReason)
    /// A validator refused the response.
    case responseValidationFailed(reason: ResponseValidationFailureReason)
    /// The exchange itself failed (connect, DNS, timeout, reset, ...); there may be no response.
    case transportFailed(TransportFailure)

    /// Why a serializer failed; the case name is the log record's `result.failure.reason`.
    public enum ResponseSerializationFailureReason {
        /// No body was received (a serializer that takes an empty one).
        case inputDataNil
        /// No body, or an empty one, where the serializer needs bytes (JSON, property list).
        case inputDataNilOrZeroLength
        /// `encoding` is the canonical IANA name of the charset tried, e.g. "utf-8".
        case stringSerializationFailed(encoding: String)
        /// The body is not JSON; `error` is a `JSONParseError` (or `JSONLinesError`).
        case jsonSerializationFailed(error: Error)
        /// The body is not a property list, or holds a value with no JSON form.
        case propertyListSerializationFailed(error: Error)
        /// Tapwire: the body is not one MessagePack value; the error names the byte offset.
        case msgpackSerializationFailed(error: MsgPackError)
        /// Tapwire: the body is not gRPC's length-prefixed messages; the error names the byte offset.
        case grpcSerializationFailed(error: GRPCFramingError)
        /// Tapwire: the body is not a protobuf message; the error names the byte offset.
        case protobufSerializationFailed(error: ProtobufError)
        /// A custom serializer threw a non-`TapwireError` error.
        case customSerializationFailed(error: Error)
        /// Tapwire: the body was cut at the capture limit, so a whole-document parse would lie.
        case inputDataTruncated(captured: Int, total: Int)
        /// Tapwire: undoing Content-Encoding failed before any serializer ran.
        case contentDecodingFailed(encoding: String, message: String)
    }

    /// Why a validator failed; the case name is the log record's `result.failure.reason`.
    public enum ResponseValidationFailureReason {
        /// The status is not among the acceptable ones.
        case unacceptableStatusCode(code: Int)
        /// The Content-Type matches none of the acceptable types.
        case unacceptableContentType(acceptableContentTypes: [String], responseContentType: String)
        /// There is no Content-Type and the acceptable types do not include `*/*`.
        case missingContentType(acceptableContentTypes: [String])
        /// A custom validator failed with a non-`TapwireError` error.
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

    /// The readable message, Alamofire's wording where Alamofire has one.
    public var message: String {
        switch self {
        case .responseSerializationFailed(let reason): return reason.message
        case .responseValidationFailed(let reason): return reason.message
        case .transportFailed(let failure): return failure.message
        }
    }

    /// The transport failure, when that is what this is.
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
        case .responseSerializationFailed(.msgpackSerializationFailed(let e)):
            return e
        case .responseSerializationFailed(.grpcSerializationFailed(let e)):
            return e
        case .responseSerializationFailed(.protobufSerializationFailed(let e)):
            return e
        default:
            return nil
        }
    }
}

extension TapwireError.ResponseSerializationFailureReason {
    /// The case name, as the log record's `result.failure.reason` stores it.
    public var name: String {
        switch self {
        case .inputDataNil: return "inputDataNil"
        case .inputDataNilOrZeroLength: return "inputDataNilOrZeroLength"
        case .stringSerializationFailed: return "stringSerializationFailed"
        case .jsonSerializationFailed: return "jsonSerializationFailed"
        case .propertyListSerializationFailed: return "propertyListSerializationFailed"
        case .msgpackSerializationFailed: return "msgpackSerializationFailed"
        case .grpcSerializationFailed: return "grpcSerializationFailed"
        case .protobufSerializationFailed: return "protobufSerializationFailed"
        case .customSerializationFailed: return "customSerializationFailed"
        case .inputDataTruncated: return "inputDataTruncated"
        case .contentDecodingFailed: return "contentDecodingFailed"
        }
    }

    /// Alamofire's message for the reason, with the underlying error's own description.
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
        case .msgpackSerializationFailed(let error):
            return "MessagePack could not be serialized because of error:\n\(error.description)"
        case .grpcSerializationFailed(let error):
            return "gRPC messages could not be serialized because of error:\n\(error.description)"
        case .protobufSerializationFailed(let error):
            return "Protobuf could not be serialized because of error:\n\(error.description)"
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
    /// The case name, as the log record's `result.failure.reason` stores it.
    public var name: String {
        switch self {
        case .unacceptableStatusCode: return "unacceptableStatusCode"
        case .unacceptableContentType: return "unacceptableContentType"
        case .missingContentType: return "missingContentType"
        case .customValidationFailed: return "customValidationFailed"
        }
    }

    /// Alamofire's message for the reason.
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
    /// `message`.
    public var errorDescription: String? { message }
    /// `message`.
    public var description: String { message }
}

/// The three strings a log record stores for any failure. Errors that are not a
/// `TapwireError` (a custom serializer's own error) are named by their type.
public struct ErrorLogFields: Sendable, Equatable {
    /// `responseSerializationFailed`, `responseValidationFailed`, `transportFailed`, or a foreign error's type name.
    public var error: String
    /// The reason's case name or transport code; nil for a foreign error.
    public var reason: String?
    /// The readable message.
    public var message: String

    /// - Parameters:
    ///   - error: The error name.
    ///   - reason: The reason name, nil when there is none.
    ///   - message: The readable message.
    public init(error: String, reason: String?, message: String) {
        self.error = error; self.reason = reason; self.message = message
    }

    /// The fields of any error: a `TapwireError`'s names, a transport failure's code, or a
    /// foreign error's type name and description.
    /// - Parameter error: Any error a serializer or validator returned.
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
