import Foundation
import HTTP1

public enum FormURLEncoded {
    /// `application/x-www-form-urlencoded` → ordered (name, value) pairs, as the
    /// WHATWG URL standard parses it: split on `&`, empty pieces dropped, the
    /// first `=` separates name from value (none: empty value), `+` is a space,
    /// `%XX` is a byte, a bad escape stays as written, bytes are read as UTF-8
    /// (invalid sequences become U+FFFD).
    public static func parse(_ data: Data) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for piece in data.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let name: Data.SubSequence
            let value: Data.SubSequence
            if let eq = piece.firstIndex(of: UInt8(ascii: "=")) {
                name = piece[piece.startIndex..<eq]
                value = piece[piece.index(after: eq)...]
            } else {
                name = piece[...]
                value = piece[piece.endIndex...]
            }
            pairs.append((percentDecode(name), percentDecode(value)))
        }
        return pairs
    }

    static func percentDecode(_ bytes: Data.SubSequence) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let byte = bytes[i]
            if byte == UInt8(ascii: "+") {
                out.append(0x20)
            } else if byte == UInt8(ascii: "%"), bytes.distance(from: i, to: bytes.endIndex) >= 3,
                      let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) {
                out.append(high << 4 | low)
                i += 3
                continue
            } else {
                out.append(byte)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// A form body → a JSON array of `[name, value]` arrays, in order (names
    /// repeat, so not an object). Nil data fails with `inputDataNil`; an empty
    /// body is an empty array. Refuses a truncated body, whose last pair would be cut.
    public static func form(emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                            emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            if let error { return .failure(error) }
            if policy.returnsEmptyValue(request: request, response: response, data: data) { return .success(.array([])) }
            guard let data else { return .failure(serializationFailure(.inputDataNil)) }
            return .success(.array(FormURLEncoded.parse(data).map { .array([.string($0.name), .string($0.value)]) }))
        }
    }
}
