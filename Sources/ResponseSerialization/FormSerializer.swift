import Foundation
import HTTP1

/// The `application/x-www-form-urlencoded` format.
public enum FormURLEncoded {
    /// `application/x-www-form-urlencoded` → ordered (name, value) pairs, as the
    /// WHATWG URL standard parses it: split on `&`, empty pieces dropped, the
    /// first `=` separates name from value (none: empty value), `+` is a space,
    /// `%XX` is a byte, a bad escape stays as written, bytes are read as UTF-8
    /// (invalid sequences become U+FFFD).
    /// - Parameter data: The body, as received.
    public static func parse(_ data: Data) -> [(name: String, value: String)] {
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            var pairs: [(name: String, value: String)] = []
            var scratch: [UInt8] = []
            var pieceStart = 0
            while pieceStart < input.count {
                var pieceEnd = pieceStart
                var equals = -1
                while pieceEnd < input.count && input[pieceEnd] != UInt8(ascii: "&") {
                    if equals < 0 && input[pieceEnd] == UInt8(ascii: "=") { equals = pieceEnd }
                    pieceEnd += 1
                }
                if pieceEnd > pieceStart {
                    let nameEnd = equals < 0 ? pieceEnd : equals
                    let valueStart = equals < 0 ? pieceEnd : equals + 1
                    let name = percentDecode(UnsafeRawBufferPointer(rebasing: input[pieceStart..<nameEnd]), using: &scratch)
                    let value = percentDecode(UnsafeRawBufferPointer(rebasing: input[valueStart..<pieceEnd]), using: &scratch)
                    pairs.append((name, value))
                }
                pieceStart = pieceEnd + 1
            }
            return pairs
        }
    }

    static func percentDecode(_ bytes: UnsafeRawBufferPointer, using out: inout [UInt8]) -> String {
        out.removeAll(keepingCapacity: true)
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "+") {
                out.append(0x20)
            } else if byte == UInt8(ascii: "%"), i + 2 < bytes.count,
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
    /// - Parameters:
    ///   - emptyResponseCodes: Statuses whose empty body is an empty array, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is an empty array;
    ///     default HEAD.
    public static func form(emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                            emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        .arrayValued(emptyResponseCodes: emptyResponseCodes, emptyRequestMethods: emptyRequestMethods) { data in
            .success(FormURLEncoded.parse(data).map { .array([.string($0.name), .string($0.value)]) })
        }
    }
}
