import HTTP1
import ResponseSerialization

/// A MIME pattern for rule matching: `application/json`, `application/*+json`,
/// `text/*`, `*/*`. Parameters are ignored on both sides.
public struct MediaTypePattern: Sendable, Equatable, CustomStringConvertible {
    public let type: Glob
    public let subtype: Glob
    public let description: String

    public init?(_ text: String) {
        let bare = text.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let pieces = bare.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count == 2, !pieces[0].isEmpty, !pieces[1].isEmpty else { return nil }
        type = Glob(String(pieces[0]), caseInsensitive: true)
        subtype = Glob(String(pieces[1]), caseInsensitive: true)
        description = text
    }

    public func matches(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let bare = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let pieces = bare.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count == 2 else { return false }
        return type.matches(String(pieces[0])) && subtype.matches(String(pieces[1]))
    }
}

/// The `match` block of a rule: every present field must match.
public struct RuleMatch: Sendable, Equatable {
    public var host: Glob?
    public var path: Glob?
    public var methods: [String]?
    public var status: [StatusPattern]?
    public var contentType: [MediaTypePattern]?
    /// Header names that must be present (request or response).
    public var headers: [String]?
    /// `websocket: true`: the rule is for the messages of WebSocket connections whose
    /// upgrade request matches (host, path, method, headers), and never for `http` records.
    public var websocket = false
    public init() {}
}

/// Which serializer a rule runs, with its options (`serializer` in the config).
public struct SerializerSpec: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case data, string, json, propertyList, jsonLines, form, eventStream, msgpack, protobuf, grpc, none
    }
    public var kind: Kind
    /// `string`: an IANA charset name that overrides the Content-Type charset.
    public var encoding: String?
    /// `json`: accept a scalar at top level (default true, as Alamofire).
    public var allowFragments: Bool = true
    /// `data`: how many leading bytes to log as base64 (0 = size only).
    public var base64Bytes: Int = 0
    /// `msgpack`: containers nested deeper than this fail (`MsgPackDecoder.defaultMaxDepth`).
    public var maxDepth: Int = MsgPackDecoder.defaultMaxDepth
    /// The largest `maxDepth` a rule may set: the decoder recurses twice per level (value,
    /// container), and a serialization worker's stack must hold that many frames
    /// (`MsgPackDecoderTests.testTheLargestConfigurableDepthFitsASmallStack`).
    public static let maxDepthLimit = 1024
    /// `eventStream`: a JSON Pointer into each event's data (parsed as JSON) whose string
    /// values are concatenated into the record's `assembled` text; nil for none.
    public var assemble: JSONPointer?
    /// `eventStream`: how many events the record keeps (the first ones); nil for all.
    public var maxEvents: Int?
    public var emptyResponseCodes: Set<Int>?
    public var emptyRequestMethods: Set<String>?
    /// `protobuf`, `grpc`: the `FileDescriptorSet` (`descriptorSet`, read at load) that names
    /// fields and enum values; nil decodes without a schema.
    public var schema: ProtobufSchema?
    /// `protobuf` with a schema: the body's message type (`message`, `package.Type`).
    public var message: String?
    /// Set by the processor for a request body: `grpc` then takes the method's input type.
    var decodesRequest = false
    public init(kind: Kind) { self.kind = kind }
}

/// `validate` in a rule: Alamofire's validators, run before the serializer.
public struct ValidationSpec: Sendable, Equatable {
    public var statusCodes: [StatusPattern]?
    public var contentTypes: [String]?
    public init() {}
}

public struct Rule: Sendable, Equatable {
    public var name: String
    public var match: RuleMatch
    public var serializer: SerializerSpec
    public var validate: ValidationSpec?
    public var select: [JSONPointer]
    public var redact: [JSONPointer]
    public init(name: String, match: RuleMatch, serializer: SerializerSpec, validate: ValidationSpec? = nil,
                select: [JSONPointer] = [], redact: [JSONPointer] = []) {
        self.name = name; self.match = match; self.serializer = serializer
        self.validate = validate; self.select = select; self.redact = redact
    }
}

import Foundation
