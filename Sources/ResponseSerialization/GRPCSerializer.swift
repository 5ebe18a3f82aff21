import Foundation
import HTTP1

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// A gRPC body (`application/grpc`, `application/grpc+proto`, `application/grpc+json`)
    /// as its messages, in order, without a schema:
    ///
    /// `{"messages":[{"offset":0,"compressed":false,"size":3,"message":{"1":150}}, …]}`
    ///
    /// Each message's `grpc-encoding` (`gzip`, `deflate`, `identity`; from the head the
    /// serializer is given) is undone when its compressed flag is set; then `+json` messages
    /// are parsed as JSON and the others decoded as `ProtobufRawDecoder` describes. A message
    /// that does not decode keeps `{"error":"…","base64":"…"}` in place of `message`, so one
    /// bad message does not hide the others. A body cut at the capture limit (or a transfer
    /// that stopped) lists its whole messages and adds `"cutShort":{"offset":N}`. A body that
    /// is not length-prefixed framing fails with `grpcSerializationFailed`.
    ///
    /// With a `schema`, the request's path (`/package.Service/Method`) selects the method,
    /// and its input (`request`) or output type decodes each `+proto` message into
    /// protobuf's canonical JSON (`ProtobufSchema`); a method the schema lacks falls back to
    /// the schema-less reading.
    /// - Parameters:
    ///   - schema: Message types by method; nil reads every message without a schema.
    ///   - request: The body is the request's (the method's input type), not the response's.
    ///   - maxDepth: Protobuf messages nested deeper than this are not read as messages.
    ///   - maxDecodedBytes: The most the body's compressed messages may inflate to together when
    ///     `grpc-encoding` is undone (so that many small bombs weigh as one); a message past it
    ///     is cut, and those after it are left compressed, with an `error`.
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value (a gRPC answer with
    ///     no message, e.g. an error, is `{"messages":[]}` regardless); default 204, 205, 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value; default HEAD.
    public static func grpc(schema: ProtobufSchema? = nil, request decodesRequest: Bool = false,
                            maxDepth: Int = ProtobufRawDecoder.defaultMaxDepth, maxDecodedBytes: Int = 8 << 20,
                            emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                            emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer(acceptsTruncatedInput: true) { request, response, data, error in
            let head = response?.headers ?? request?.headers ?? HTTPHeaders()
            let encoding = head.first(name: "grpc-encoding")
            let isJSON = head.first(name: "content-type").map { $0.lowercased().hasPrefix("application/grpc+json") } ?? false
            let method = schema.flatMap { schema in request.flatMap { schema.method(path: GRPCValue.path(of: $0.target)) } }
            let typed = schema.flatMap { s in method.map { (s, decodesRequest ? $0.input : $0.output) } }
            return policy.result(request, response, data, error, emptyValue: .object([JSON.Member("messages", .array([]))]),
                                 requiresBytes: false) { data in
                let bytes = [UInt8](data)
                do throws(GRPCFramingError) {
                    let split = try GRPCMessages.split(bytes)
                    return .success(GRPCValue.make(bytes, split, encoding: encoding, isJSON: isJSON, schema: typed,
                                                   maxDecodedBytes: maxDecodedBytes, maxDepth: maxDepth))
                } catch {
                    return .failure(serializationFailure(.grpcSerializationFailed(error: error)))
                }
            }
        }
    }
}

/// The record's value for a split gRPC body (see `grpc`).
enum GRPCValue {
    /// The path of a request target: origin-form as it is, absolute-form after its authority;
    /// the query left out.
    static func path(of target: String) -> String {
        var path = Substring(target)
        if let scheme = path.range(of: "://") {
            let rest = path[scheme.upperBound...]
            path = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        return String(path.prefix { $0 != "?" })
    }

    static func make(_ bytes: [UInt8], _ split: GRPCMessages, encoding: String?, isJSON: Bool,
                     schema: (ProtobufSchema, String)? = nil, maxDecodedBytes: Int, maxDepth: Int) -> JSON {
        var messages: [JSON] = []
        var budget = maxDecodedBytes
        messages.reserveCapacity(split.messages.count)
        for m in split.messages {
            var members = [JSON.Member("offset", .number(String(m.offset))),
                           JSON.Member("compressed", .bool(m.compressed)),
                           JSON.Member("size", .number(String(m.payload.count)))]
            var payload = Array(bytes[m.payload])
            var problem: String?
            if m.compressed {
                if let encoding, encoding.lowercased() != "identity", budget <= 0 {
                    problem = "grpc-encoding \(encoding): the body's messages inflate past the decode limit"
                } else if let encoding, encoding.lowercased() != "identity" {
                    do throws(ContentDecodingError) {
                        let decoded = try ContentDecoder(maxOutputBytes: budget).decode(payload, contentEncoding: encoding)
                        budget -= decoded.bytes.count
                        if decoded.truncated { problem = "grpc-encoding \(encoding): the body's messages inflate past the decode limit" }
                        payload = decoded.bytes
                    } catch {
                        problem = "grpc-encoding \(encoding): \(error.description)"
                    }
                } else {
                    problem = "the compressed flag is set but no grpc-encoding names a compression"
                }
            }
            if problem == nil {
                if isJSON {
                    do throws(JSONParseError) { members.append(JSON.Member("message", try JSONParser.parse(payload))) }
                    catch { problem = error.description }
                } else if let (schema, type) = schema {
                    do throws(ProtobufError) { members.append(JSON.Member("message", try schema.decode(payload, message: type, maxDepth: maxDepth))) }
                    catch { problem = error.description }
                } else {
                    do throws(ProtobufError) { members.append(JSON.Member("message", try ProtobufRawDecoder.decode(payload, maxDepth: maxDepth))) }
                    catch { problem = error.description }
                }
            }
            if let problem {
                members.append(JSON.Member("error", .string(problem)))
                members.append(JSON.Member("base64", .string(Data(bytes[m.payload]).base64EncodedString())))
            }
            messages.append(.object(members))
        }
        var value = [JSON.Member("messages", .array(messages))]
        if let cut = split.cutShort {
            value.append(JSON.Member("cutShort", .object([JSON.Member("offset", .number(String(cut.offset)))])))
        }
        return .object(value)
    }
}

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// A protobuf body (`application/x-protobuf`, `application/protobuf`,
    /// `application/vnd.google.protobuf`) as one message read without a schema, as
    /// `ProtobufRawDecoder` describes. The MessagePack serializer's checks in its order: nil or
    /// empty data fails with `inputDataNilOrZeroLength` (an empty message has no bytes, but
    /// nothing tells it from a missing body), an allowed empty response is `.null`, a
    /// truncated body is refused. Bytes that are not a message fail with
    /// `protobufSerializationFailed`, whose message names the byte offset.
    /// With a `schema`, the message is decoded as its type into protobuf's canonical JSON.
    /// - Parameters:
    ///   - schema: The descriptor set and the body's message type; nil reads without a schema.
    ///   - maxDepth: Messages and groups nested deeper than this fail; default 64.
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value; default 204, 205, 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value; default HEAD.
    public static func protobuf(schema: (ProtobufSchema, String)? = nil, maxDepth: Int = ProtobufRawDecoder.defaultMaxDepth,
                                emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                                emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            policy.result(request, response, data, error, emptyValue: .null, requiresBytes: true) { data in
                do throws(ProtobufError) {
                    let bytes = [UInt8](data)
                    if let (schema, type) = schema { return .success(try schema.decode(bytes, message: type, maxDepth: maxDepth)) }
                    return .success(try ProtobufRawDecoder.decode(bytes, maxDepth: maxDepth))
                } catch {
                    return .failure(serializationFailure(.protobufSerializationFailed(error: error)))
                }
            }
        }
    }
}
