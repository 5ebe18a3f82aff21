import Foundation
import ResponseSerialization

/// From a rule's serializer kind to the built-in serializer it names: one table, so
/// every kind is run the same way (`CompletedExchange.serialize(with:)`) and a new kind
/// is one line here.
extension SerializerSpec {
    /// The rule's empty-response options, the defaults where it sets none.
    var emptyResponsePolicy: EmptyResponsePolicy {
        EmptyResponsePolicy(codes: emptyResponseCodes ?? EmptyResponsePolicy.defaultCodes,
                            methods: emptyRequestMethods ?? EmptyResponsePolicy.defaultMethods)
    }

    /// The built-in serializer `kind` names, its value as the JSON a record logs; nil for
    /// `none`, which runs no serializer (its value is null, or the exchange's error).
    /// - Parameter charset: what the string serializer decodes with.
    func serializer(charset: Charset) -> DataResponseSerializer<JSON>? {
        let policy = emptyResponsePolicy
        let codes = policy.codes, methods = policy.methods
        switch kind {
        case .none: return nil
        case .data:
            let base64Bytes = self.base64Bytes
            return DataResponseSerializer<Data>.data(emptyResponseCodes: codes, emptyRequestMethods: methods)
                .map { ExchangeProcessor.dataValue($0, base64Bytes: base64Bytes) }
        case .string:
            return DataResponseSerializer<String>.string(encoding: charset, emptyResponseCodes: codes, emptyRequestMethods: methods)
                .map { JSON.string($0) }
        case .json: return .json(allowFragments: allowFragments, emptyResponseCodes: codes, emptyRequestMethods: methods)
        case .propertyList: return .propertyList(emptyResponseCodes: codes, emptyRequestMethods: methods)
        case .jsonLines: return .jsonLines(emptyResponseCodes: codes, emptyRequestMethods: methods)
        case .form: return .form(emptyResponseCodes: codes, emptyRequestMethods: methods)
        case .eventStream:
            return .eventStream(assemble: assemble, maxEvents: maxEvents, emptyResponseCodes: codes, emptyRequestMethods: methods)
        case .msgpack: return .msgpack(maxDepth: maxDepth, emptyResponseCodes: codes, emptyRequestMethods: methods)
        case .protobuf:
            return .protobuf(schema: schema.flatMap { s in message.map { (s, $0) } }, emptyResponseCodes: codes, emptyRequestMethods: methods)
        case .grpc: return .grpc(schema: schema, request: decodesRequest, emptyResponseCodes: codes, emptyRequestMethods: methods)
        }
    }
}
