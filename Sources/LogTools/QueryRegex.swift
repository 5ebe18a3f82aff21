import Foundation

/// A case-insensitive regular expression, searched (not anchored) in a text.
struct QueryRegex: @unchecked Sendable {
    // NSRegularExpression is immutable once made and documented as safe to use from several threads.
    private let expression: NSRegularExpression?

    init(_ pattern: String, anchorsMatchLines: Bool) {
        var options: NSRegularExpression.Options = [.caseInsensitive]
        if anchorsMatchLines { options.insert(.anchorsMatchLines) }
        expression = try? NSRegularExpression(pattern: pattern, options: options)
    }

    func found(in text: String) -> Bool {
        guard let expression else { return false }
        return expression.firstMatch(in: text, options: [], range: NSRange(text.startIndex..., in: text)) != nil
    }
}
