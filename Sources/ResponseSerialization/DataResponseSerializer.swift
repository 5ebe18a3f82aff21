import Foundation
import HTTP1

/// A serializer turns a completed exchange into a value, Alamofire-style: one
/// closure of (request, response, data, error).
public protocol DataResponseSerializerProtocol {
    /// The value a successful serialization gives.
    associatedtype SerializedObject
    /// The serializer: given the request, the response, the body after content decoding
    /// and the exchange's error (transport, validation or `inputDataTruncated`), the value
    /// or the failure. The built-ins return a passed-in error unchanged.
    var serializeResponse: (HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<SerializedObject, Error> { get }
    /// Whether a body cut at the capture limit may be serialized as it is. When
    /// false the exchange hands the serializer `inputDataTruncated` as its error.
    var acceptsTruncatedInput: Bool { get }
    /// What `serializeResponse` does, for a body cut at the capture or decode limit (called
    /// only when `acceptsTruncatedInput`): a cut can end inside a multi-byte character,
    /// which must not fail a prefix that is otherwise good text.
    func serializeCapturedPrefix(_ request: HTTPRequestHead?, _ response: HTTPResponseHead?,
                                 _ data: Data?, _ error: Error?) -> Result<SerializedObject, Error>
}

extension DataResponseSerializerProtocol {
    /// By default a serializer needs the whole body.
    public var acceptsTruncatedInput: Bool { false }

    /// By default a cut body is serialized as a whole one would be.
    /// - Parameters:
    ///   - request: The request head.
    ///   - response: The response head, nil when none arrived.
    ///   - data: The body kept, a prefix of the whole.
    ///   - error: The exchange's error, if any.
    public func serializeCapturedPrefix(_ request: HTTPRequestHead?, _ response: HTTPResponseHead?,
                                        _ data: Data?, _ error: Error?) -> Result<SerializedObject, Error> {
        serializeResponse(request, response, data, error)
    }
}

/// A serializer built from a closure; the built-ins are static factories on it
/// (`.data()`, `.string()`, `.json()`, `.propertyList()`, `.jsonLines()`,
/// `.form()`, `.eventStream()`, `.msgpack()`), usable with a leading dot wherever a
/// serializer is expected.
public struct DataResponseSerializer<Value>: DataResponseSerializerProtocol {
    /// The value a successful serialization gives.
    public typealias SerializedObject = Value
    /// The closure the serializer was made from.
    public let serializeResponse: (HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<Value, Error>
    /// Whether a body cut at the capture limit reaches `serializeResponse` (else the
    /// exchange hands it `inputDataTruncated` as its error).
    public let acceptsTruncatedInput: Bool
    /// `serializeResponse` for a cut body, when it differs (the string serializer's).
    let serializePrefix: ((HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<Value, Error>)?

    /// A serializer from a closure, as Alamofire's `DataResponseSerializer(serializeResponse:)`.
    /// - Parameters:
    ///   - acceptsTruncatedInput: Whether a body cut at the capture limit may be serialized
    ///     as it is; default false (the closure gets `inputDataTruncated` as its error).
    ///   - serializeResponse: Given request, response, data and the exchange's error; return
    ///     a passed-in error unchanged to keep the built-ins' behaviour.
    public init(acceptsTruncatedInput: Bool = false,
                serializeResponse: @escaping (HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<Value, Error>) {
        self.acceptsTruncatedInput = acceptsTruncatedInput
        self.serializeResponse = serializeResponse
        self.serializePrefix = nil
    }

    init(serializeResponse: @escaping (HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<Value, Error>,
         serializeCapturedPrefix: @escaping (HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<Value, Error>) {
        self.acceptsTruncatedInput = true
        self.serializeResponse = serializeResponse
        self.serializePrefix = serializeCapturedPrefix
    }

    /// The string serializer reads a cut body as a prefix (without the character the cut
    /// split); every other serializer as it reads a whole one.
    /// - Parameters:
    ///   - request: The request head.
    ///   - response: The response head, nil when none arrived.
    ///   - data: The body kept, a prefix of the whole.
    ///   - error: The exchange's error, if any.
    public func serializeCapturedPrefix(_ request: HTTPRequestHead?, _ response: HTTPResponseHead?,
                                        _ data: Data?, _ error: Error?) -> Result<Value, Error> {
        (serializePrefix ?? serializeResponse)(request, response, data, error)
    }

    /// This serializer with `transform` applied to the value it produces: the same checks,
    /// the same errors, the same handling of a cut body.
    /// - Parameter transform: Turns a successful value into the new serializer's value.
    public func map<NewValue>(_ transform: @escaping (Value) -> NewValue) -> DataResponseSerializer<NewValue> {
        let whole = serializeResponse
        let prefix = serializePrefix
        return DataResponseSerializer<NewValue>(
            acceptsTruncatedInput: acceptsTruncatedInput,
            serializeResponse: { whole($0, $1, $2, $3).map(transform) },
            serializeCapturedPrefix: prefix.map { prefix in { prefix($0, $1, $2, $3).map(transform) } })
    }

    private init(acceptsTruncatedInput: Bool,
                 serializeResponse: @escaping (HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<Value, Error>,
                 serializeCapturedPrefix: ((HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<Value, Error>)?) {
        self.acceptsTruncatedInput = acceptsTruncatedInput
        self.serializeResponse = serializeResponse
        self.serializePrefix = serializeCapturedPrefix
    }
}

func serializationFailure(_ reason: TapwireError.ResponseSerializationFailureReason) -> Error {
    TapwireError.responseSerializationFailed(reason: reason)
}

// MARK: - Data

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<Data> {
    /// The bytes as they are. Fails only on nil data; accepts a truncated body.
    /// - Parameters:
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value;
    ///     default HEAD.
    public static func data(emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                            emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<Data> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer(acceptsTruncatedInput: true) { request, response, data, error in
            policy.result(request, response, data, error, emptyValue: Data(), requiresBytes: false) { .success($0) }
        }
    }
}

// MARK: - String

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<String> {
    /// Text in `encoding`, else the Content-Type charset, else ISO-8859-1.
    /// Fails only on nil data or bytes invalid in the chosen charset; accepts a truncated
    /// body, without the character the cut split (`Charset.decodePrefix`).
    /// - Parameters:
    ///   - encoding: Default nil: the Content-Type's charset, else ISO-8859-1.
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value;
    ///     default HEAD.
    public static func string(encoding: Charset? = nil,
                              emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                              emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<String> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        func serialize(prefix: Bool) -> (HTTPRequestHead?, HTTPResponseHead?, Data?, Error?) -> Result<String, Error> {
            return { request, response, data, error in
                policy.result(request, response, data, error, emptyValue: "", requiresBytes: false) { data in
                    if data.isEmpty { return .success("") }
                    let charset = Charset.forResponse(explicit: encoding, response: response)
                    guard let string = prefix ? charset.decodePrefix(data) : charset.decode(data) else {
                        return .failure(serializationFailure(.stringSerializationFailed(encoding: charset.name)))
                    }
                    return .success(string)
                }
            }
        }
        return DataResponseSerializer(serializeResponse: serialize(prefix: false),
                                      serializeCapturedPrefix: serialize(prefix: true))
    }
}

// MARK: - Array-valued (NDJSON, form, event stream)

extension DataResponseSerializer where Value == JSON {
    /// The checks every array-valued serializer makes, in Alamofire's order: an error
    /// passed in, an allowed empty response (an empty array), nil data; then `parse`.
    static func arrayValued(emptyResponseCodes: Set<Int>, emptyRequestMethods: Set<String>,
                            parse: @escaping (Data) -> Result<[JSON], Error>) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            policy.result(request, response, data, error, emptyValue: .array([]), requiresBytes: false) { data in
                parse(data).map { .array($0) }
            }
        }
    }
}

// MARK: - JSON

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// A typed JSON value keeping member order and number text. Fragments are
    /// allowed by default, as in Alamofire. Empty-allowed responses give `.null`.
    /// - Parameters:
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value;
    ///     default HEAD.
    public static func json(allowFragments: Bool = true, maxDepth: Int = 512,
                            emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                            emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            policy.result(request, response, data, error, emptyValue: .null, requiresBytes: true) { data in
                do {
                    let value = try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSON in
                        try JSONParser.parse(bytes, allowFragments: allowFragments, maxDepth: maxDepth)
                    }
                    return .success(value)
                } catch {
                    return .failure(serializationFailure(.jsonSerializationFailed(error: error)))
                }
            }
        }
    }
}

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<CompactJSON> {
    /// `json(...)`'s checks in the same order and with the same errors; the value is its text.
    /// - Parameters:
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    ///   - keys: Member names whose values are written as `"[redacted]"` at any depth;
    ///     default none.
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value;
    ///     default HEAD.
    public static func compactJSON(allowFragments: Bool = true, maxDepth: Int = 512, redactingKeys keys: JSONKeySet = JSONKeySet([]),
                                   emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                                   emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<CompactJSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            guard let data else {
                return CompactJSON.serialize(method: request?.method, status: response?.status, body: nil, error: error,
                                             allowFragments: allowFragments, maxDepth: maxDepth, redactingKeys: keys, policy: policy)
            }
            return data.withUnsafeBytes {
                CompactJSON.serialize(method: request?.method, status: response?.status, body: $0, error: error,
                                      allowFragments: allowFragments, maxDepth: maxDepth, redactingKeys: keys, policy: policy)
            }
        }
    }
}

// MARK: - Property list

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// An XML, binary or OpenStep property list, mapped to `JSON` (see
    /// `PropertyListConversion`). Empty-allowed responses give `.null`.
    /// - Parameters:
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value;
    ///     default HEAD.
    public static func propertyList(emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                                    emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            policy.result(request, response, data, error, emptyValue: .null, requiresBytes: true) { data in
                do {
                    let object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
                    return .success(try PropertyListConversion.json(from: object))
                } catch {
                    return .failure(serializationFailure(.propertyListSerializationFailed(error: error)))
                }
            }
        }
    }
}

// MARK: - Custom

extension DataResponseSerializer {
    /// A serializer from a throwing closure, with the built-ins' first check
    /// (an error passed in is returned unchanged). A thrown `TapwireError` is
    /// kept; any other error becomes `customSerializationFailed(error:)`.
    /// - Parameters:
    ///   - acceptsTruncatedInput: Whether a cut body reaches `body`; default false.
    ///   - body: Given request, response and data; returns the value or throws.
    public static func custom(acceptsTruncatedInput: Bool = false,
                              _ body: @escaping (HTTPRequestHead?, HTTPResponseHead?, Data?) throws -> Value) -> DataResponseSerializer<Value> {
        DataResponseSerializer(acceptsTruncatedInput: acceptsTruncatedInput) { request, response, data, error in
            if let error { return .failure(error) }
            do {
                return .success(try body(request, response, data))
            } catch let error as TapwireError {
                return .failure(error)
            } catch {
                return .failure(serializationFailure(.customSerializationFailed(error: error)))
            }
        }
    }
}

extension CompletedExchange {
    /// `serialize(with: .compactJSON(…))`, specialized here. Generic code called from
    /// another module runs unspecialized, and the log's workers would look up `Result`'s and
    /// `DataResponse`'s generic metadata at run time for every record.
    /// - Parameters:
    ///   - allowFragments: Accept a scalar at top level.
    ///   - keys: Member names whose values are written as `"[redacted]"` at any depth.
    ///   - emptyResponseCodes: Statuses whose empty body is `null`.
    ///   - emptyRequestMethods: Request methods whose empty response is `null`.
    public func serializeCompactJSON(allowFragments: Bool, redactingKeys keys: JSONKeySet,
                                     emptyResponseCodes: Set<Int>, emptyRequestMethods: Set<String>) -> DataResponse<CompactJSON> {
        serialize(with: .compactJSON(allowFragments: allowFragments, redactingKeys: keys,
                                     emptyResponseCodes: emptyResponseCodes, emptyRequestMethods: emptyRequestMethods))
    }
}
