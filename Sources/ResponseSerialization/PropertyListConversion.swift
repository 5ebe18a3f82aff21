import Foundation

/// Maps a Foundation property list to `JSON` so every serializer's value is
/// logged the same way:
/// dictionary → object with keys sorted (plist dictionaries have no order, and a
/// stable order keeps records diffable); array → array; string → string;
/// integer → number (exact decimal text, unsigned 64-bit included);
/// real → number (shortest round-trip text; NaN and infinities, which JSON
/// cannot hold, become strings "nan", "inf", "-inf"); boolean → bool;
/// date → RFC 3339 UTC string (fraction only when not whole seconds);
/// data → base64 string.
public enum PropertyListConversion {
    /// A value with no JSON form (a type property lists do not define).
    public struct UnsupportedValue: Error, CustomStringConvertible {
        /// The Swift type found.
        public var typeName: String
        /// Names the type.
        public var description: String { "property list value of type \(typeName) has no JSON form" }
    }

    /// The JSON form of a value `PropertyListSerialization` returned, as described above.
    /// - Parameter object: A property list value.
    /// - Throws: `UnsupportedValue` for a value of another type.
    public static func json(from object: Any) throws -> JSON {
        switch object {
        case let string as String:
            return .string(string)
        case let date as Date:
            return .string(rfc3339(date))
        case let data as Data:
            return .string(data.base64EncodedString())
        case let array as [Any]:
            return .array(try array.map { try json(from: $0) })
        case let dictionary as [AnyHashable: Any]:
            let members = try dictionary.map { (key, value) -> JSON.Member in
                let name = (key.base as? String) ?? String(describing: key.base)
                return JSON.Member(name, try json(from: value))
            }
            return .object(members.sorted { $0.key < $1.key })
        case let number as NSNumber:
            return jsonNumber(number)
        default:
            throw UnsupportedValue(typeName: String(describing: type(of: object)))
        }
    }

    // Foundation's plist reader hands out NSNumber (or bridged Bool/Int/Double);
    // the Objective-C type code is the one reliable way to tell booleans, reals
    // and unsigned integers apart on every platform.
    private static func jsonNumber(_ number: NSNumber) -> JSON {
        switch String(cString: number.objCType) {
        case "c", "B":
            return .bool(number.boolValue)
        case "d", "f":
            let value = number.doubleValue
            if value.isNaN { return .string("nan") }
            if value.isInfinite { return .string(value < 0 ? "-inf" : "inf") }
            // Swift's shortest round-trip text ("1.5", "12.0", "1e+20") is valid JSON.
            return .number("\(value)")
        case "Q", "L", "I", "S", "C":
            return .number(String(number.uint64Value))
        default:
            return .number(String(number.int64Value))
        }
    }

    /// The first second of year 1 and the last of year 9999: RFC 3339 has four year digits.
    static let rfc3339Range: ClosedRange<Double> = -62_135_596_800 ... 253_402_300_799

    /// `date` as RFC 3339 UTC. A binary plist stores a date as a raw double, so a response
    /// can hold NaN, infinity or 1e300: converting those to `time_t` would trap and take the
    /// whole proxy down. Outside years 1...9999 the value is logged as its seconds since
    /// 1970 in text (`"nan"`, `"inf"`, `"1e+300"`), as the plist's reals are.
    static func rfc3339(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        if interval.isNaN { return "nan" }
        if interval.isInfinite { return interval < 0 ? "-inf" : "inf" }
        let whole = interval.rounded(.down)
        guard rfc3339Range.contains(whole) else { return "\(interval)" }
        var seconds = time_t(whole)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let fraction = interval - whole
        var text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d",
                          Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                          Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        let micros = Int((fraction * 1_000_000).rounded())
        if micros > 0 && micros < 1_000_000 {
            text += String(format: ".%06d", micros)
            while text.hasSuffix("0") { text.removeLast() }
        }
        return text + "Z"
    }
}
