import Foundation
import HTTP1

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// A MessagePack body (`application/msgpack`, `application/x-msgpack`) as `JSON`, mapped
    /// as `MsgPackDecoder` describes. The JSON serializer's checks in its order: nil or empty
    /// data fails with `inputDataNilOrZeroLength`, an allowed empty response is `.null`, a
    /// truncated body is refused (its value would be cut). Bytes that are not one MessagePack
    /// value fail with `msgpackSerializationFailed`, whose message names the byte offset.
    /// - Parameters:
    ///   - maxDepth: Containers nested deeper than this fail; default 512.
    ///   - emptyResponseCodes: Statuses whose empty body is the empty value, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is the empty value;
    ///     default HEAD.
    public static func msgpack(maxDepth: Int = MsgPackDecoder.defaultMaxDepth,
                               emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                               emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            policy.result(request, response, data, error, emptyValue: .null, requiresBytes: true) { data in
                do throws(MsgPackError) {
                    return .success(try MsgPackDecoder.decode(data, maxDepth: maxDepth))
                } catch {
                    return .failure(serializationFailure(.msgpackSerializationFailed(error: error)))
                }
            }
        }
    }
}
