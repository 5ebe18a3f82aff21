/// Tapwire's own endpoints, named by a request target's path (any query ignored).
enum AdminEndpoint: Equatable {
    case health
    case metrics

    /// Compares UTF-8 bytes: this runs on the loop for every absolute-form request, and a
    /// `String` comparison after `prefix(while:)` would walk grapheme clusters there.
    init?(target: String) {
        var target = target
        guard let endpoint = target.withUTF8(Self.endpoint(path:)) else { return nil }
        self = endpoint
    }

    private static func endpoint(path bytes: UnsafeBufferPointer<UInt8>) -> AdminEndpoint? {
        // Both paths are 8 bytes, then the end or a query.
        guard bytes.count == 8 || (bytes.count > 8 && bytes[8] == UInt8(ascii: "?")) else { return nil }
        let path = bytes[..<8]
        if path.elementsEqual("/healthz".utf8) { return .health }
        if path.elementsEqual("/metrics".utf8) { return .metrics }
        return nil
    }
}
