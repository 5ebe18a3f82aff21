/// A decimal number kept exactly as written: `12`, `-0.5`, `1e3`. Compares by value without
/// going through `Double`, so record numbers such as ids beyond 2^53 compare exactly.
public struct ExactNumber: Sendable, Equatable, Comparable, CustomStringConvertible {
    public let negative: Bool
    /// Significant digits without leading or trailing zeros (empty for zero).
    public let digits: [UInt8]
    /// The value is 0.d1d2d3… × 10^exponent.
    public let exponent: Int

    /// Reads JSON's number grammar (a leading `+` and a bare `.5` are accepted too).
    public init?(_ text: String) {
        var bytes = Array(text.utf8)[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") {
            negative = bytes.first == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        var mantissa: [UInt8] = []
        var pointAt: Int?
        var sawDigit = false
        while let b = bytes.first, (b >= 48 && b <= 57) || b == UInt8(ascii: ".") {
            if b == UInt8(ascii: ".") {
                guard pointAt == nil else { return nil }
                pointAt = mantissa.count
            } else {
                mantissa.append(b - 48)
                sawDigit = true
            }
            bytes = bytes.dropFirst()
        }
        guard sawDigit else { return nil }
        var exponent = 0
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            var expNegative = false
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") {
                expNegative = bytes.first == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            guard !bytes.isEmpty, bytes.count <= 9, bytes.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            exponent = Int(String(decoding: bytes, as: UTF8.self)) ?? 0
            if expNegative { exponent = -exponent }
            bytes = []
        }
        guard bytes.isEmpty else { return nil }
        self.init(negative: negative, mantissa: mantissa, pointAt: pointAt ?? mantissa.count, exponent: exponent)
    }

    /// `mantissa` digits with the decimal point before index `pointAt`, times 10^exponent.
    init(negative: Bool, mantissa: [UInt8], pointAt: Int, exponent: Int) {
        var first = 0
        while first < mantissa.count, mantissa[first] == 0 { first += 1 }
        var last = mantissa.count
        while last > first, mantissa[last - 1] == 0 { last -= 1 }
        digits = Array(mantissa[first..<last])
        self.exponent = digits.isEmpty ? 0 : pointAt - first + exponent
        self.negative = digits.isEmpty ? false : negative
    }

    public init(_ value: Int) {
        self.init(String(value))!
    }

    public var isZero: Bool { digits.isEmpty }

    /// The nearest `Double` (for times, where microseconds are the precision anyway).
    public var doubleValue: Double { Double(description) ?? 0 }

    /// This number times 10^power, exactly.
    func scaled(byPowerOfTen power: Int) -> ExactNumber {
        ExactNumber(negative: negative, mantissa: digits, pointAt: 0, exponent: exponent + power)
    }

    /// This number times a small positive integer, exactly.
    func multiplied(by factor: Int) -> ExactNumber {
        guard !digits.isEmpty, factor != 1 else { return self }
        var result: [UInt8] = []
        var carry = 0
        for d in digits.reversed() {
            let v = Int(d) * factor + carry
            result.append(UInt8(v % 10))
            carry = v / 10
        }
        var extra = 0
        while carry > 0 {
            result.append(UInt8(carry % 10))
            carry /= 10
            extra += 1
        }
        return ExactNumber(negative: negative, mantissa: result.reversed(), pointAt: 0, exponent: exponent + extra)
    }

    public var description: String {
        guard !digits.isEmpty else { return "0" }
        return (negative ? "-" : "") + "0." + digits.map { String($0) }.joined() + "e" + String(exponent)
    }

    public static func < (a: ExactNumber, b: ExactNumber) -> Bool {
        if a.negative != b.negative { return a.negative }
        let magnitudeLess = lessInMagnitude(a, b)
        let magnitudeEqual = a.digits == b.digits && (a.exponent == b.exponent || a.digits.isEmpty)
        if magnitudeEqual { return false }
        return a.negative ? !magnitudeLess : magnitudeLess
    }

    private static func lessInMagnitude(_ a: ExactNumber, _ b: ExactNumber) -> Bool {
        if a.digits.isEmpty { return !b.digits.isEmpty }
        if b.digits.isEmpty { return false }
        if a.exponent != b.exponent { return a.exponent < b.exponent }
        for (x, y) in zip(a.digits, b.digits) where x != y { return x < y }
        return a.digits.count < b.digits.count
    }
}

extension ExactNumber {
    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.init(String(decoding: bytes, as: UTF8.self))
    }

    var isInteger: Bool { digits.count <= exponent }
}
