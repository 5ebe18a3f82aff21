import Foundation

/// The JSON forms protobuf's canonical mapping gives its well-known types
/// (https://protobuf.dev/programming-guides/proto3/#json), applied to a message already
/// decoded as the ordinary message it is:
/// - `Timestamp` → RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits; `Duration` →
///   `"1.500s"` the same way, its sign in front;
/// - the wrappers (`Int32Value`, `StringValue`, …) → their bare value (64-bit integers as
///   strings), the type's default when unset;
/// - `Struct` → an object, `ListValue` → an array, `Value` → whichever member it holds,
///   `NullValue` → `null`; `Empty` → `{}`; `FieldMask` → its paths in lowerCamelCase joined
///   by commas;
/// - `Any` → `{"@type": URL, …the packed message's members}`, or `{"@type": URL, "value": …}`
///   when the packed message has a form of its own; a type the set does not have keeps its
///   bytes in base64 under `"value"`.
/// A message that does not have the shape its type names (another version's fields) is
/// left as decoded.
extension ProtobufSchema {
    static let nullValueType = "google.protobuf.NullValue"

    /// Types whose JSON form is not an object of their fields (so `Any` nests them under `value`).
    private static let specialForms: Set<String> = [
        "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Struct", "google.protobuf.Value",
        "google.protobuf.ListValue", "google.protobuf.FieldMask", "google.protobuf.Empty",
        "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
        "google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
        "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
    ]

    /// The canonical form of a decoded `type`, or nil when it is an ordinary message.
    func wellKnown(_ type: String, _ members: [JSON.Member], depth: Int, maxDepth: Int, at: Int) throws(ProtobufError) -> JSON? {
        guard type.hasPrefix("google.protobuf.") else { return nil }
        func member(_ name: String) -> JSON? { members.last { $0.key == name }?.value }
        func integer(_ name: String) -> Int64? {
            switch member(name) {
            case nil: return 0
            case .string(let text)?, .number(let text)?: return Int64(text)
            default: return nil
            }
        }
        switch type {
        case "google.protobuf.Timestamp":
            guard let seconds = integer("seconds"), let nanos = integer("nanos") else { return nil }
            return Self.timestamp(seconds: seconds, nanos: nanos).map(JSON.string)
        case "google.protobuf.Duration":
            guard let seconds = integer("seconds"), let nanos = integer("nanos") else { return nil }
            return Self.duration(seconds: seconds, nanos: nanos).map(JSON.string)
        case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int32Value",
             "google.protobuf.UInt32Value":
            return member("value") ?? .number("0")
        case "google.protobuf.Int64Value", "google.protobuf.UInt64Value":
            return member("value") ?? .string("0")
        case "google.protobuf.BoolValue":
            return member("value") ?? .bool(false)
        case "google.protobuf.StringValue", "google.protobuf.BytesValue":
            return member("value") ?? .string("")
        case "google.protobuf.Struct":
            return member("fields") ?? .object([])
        case "google.protobuf.ListValue":
            return member("values") ?? .array([])
        case "google.protobuf.Value":
            // One member of the oneof, already in its own form (NullValue as null).
            return members.last?.value ?? .null
        case "google.protobuf.Empty":
            return .object([])
        case "google.protobuf.FieldMask":
            guard case .array(let paths)? = member("paths") ?? .array([]) else { return nil }
            return .string(paths.compactMap { path -> String? in
                if case .string(let text) = path { return Self.lowerCamel(text) }
                return nil
            }.joined(separator: ","))
        case "google.protobuf.Any":
            return try any(member("typeUrl"), member("value"), depth: depth, maxDepth: maxDepth, at: at)
        default:
            return nil
        }
    }

    private func any(_ url: JSON?, _ value: JSON?, depth: Int, maxDepth: Int, at: Int) throws(ProtobufError) -> JSON? {
        guard case .string(let typeURL)? = url else { return url == nil && value == nil ? .object([]) : nil }
        let packed: String
        if case .string(let base64)? = value { packed = base64 } else { packed = "" }
        let name = typeURL.split(separator: "/").last.map(String.init) ?? typeURL
        guard hasMessage(name), let bytes = Data(base64Encoded: packed) else {
            return .object([JSON.Member("@type", .string(typeURL)), JSON.Member("value", .string(packed))])
        }
        let decoded = try decode([UInt8](bytes)[...], type: name, depth: depth + 1, maxDepth: maxDepth, base: at)
        if !Self.specialForms.contains(name), case .object(let fields) = decoded {
            return .object([JSON.Member("@type", .string(typeURL))] + fields)
        }
        return .object([JSON.Member("@type", .string(typeURL)), JSON.Member("value", decoded)])
    }

    /// Fractional digits as the mapping writes them: none, 3, 6 or 9.
    private static func fraction(_ nanos: Int64) -> String {
        guard nanos != 0 else { return "" }
        var digits = String(nanos)
        digits = String(repeating: "0", count: max(0, 9 - digits.count)) + digits
        if nanos % 1_000_000 == 0 { return "." + digits.prefix(3) }
        if nanos % 1_000 == 0 { return "." + digits.prefix(6) }
        return "." + digits
    }

    /// RFC 3339 in UTC, years 1 to 9999 as the mapping allows; nil outside them.
    static func timestamp(seconds: Int64, nanos: Int64) -> String? {
        guard seconds >= -62_135_596_800, seconds <= 253_402_300_799, nanos >= 0, nanos < 1_000_000_000 else { return nil }
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let date = CivilDate(daysSince1970: days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let y = String(date.year)
        return String(repeating: "0", count: max(0, 4 - y.count)) + y + "-" + two(date.month) + "-" + two(date.day) + "T"
            + two(secondOfDay / 3_600) + ":" + two(secondOfDay % 3_600 / 60) + ":" + two(secondOfDay % 60) + fraction(nanos) + "Z"
    }

    /// `"-1.500s"`; nil when seconds and nanos disagree in sign or are out of range.
    static func duration(seconds: Int64, nanos: Int64) -> String? {
        guard abs(seconds) <= 315_576_000_000, abs(nanos) < 1_000_000_000,
              !(seconds > 0 && nanos < 0), !(seconds < 0 && nanos > 0) else { return nil }
        let negative = seconds < 0 || nanos < 0
        return (negative ? "-" : "") + String(abs(seconds)) + fraction(abs(nanos)) + "s"
    }
}
