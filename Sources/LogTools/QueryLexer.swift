/// Splits a query into tokens, each with the column (characters from 1) where it starts.
///
/// - `(` `)` group; `|` or `or`, `&` or `and`, `!` or `not` combine (the words in any case).
/// - `FIELD OP VALUE` is one token when a field name is directly followed by an operator:
///   `=` `!=` `<` `<=` `>` `>=` `~`. The value is a `"quoted string"` (with `\"` and `\\`) or runs
///   to the next space, `|` or `&`, or to a `)` that closes a parenthesis opened outside it (so a
///   regex keeps its own groups and alternatives inside them: `url~(a|b)`).
/// - `~x ARG` is a mitmproxy filter: `~` and letters at the start of a token; the codes that take
///   an argument take the next word or quoted string with them.
/// - Anything else is a bare word (up to a space, a parenthesis, `|` or `&`) or a quoted phrase.
///
/// So `(` `)` `|` `&` end unquoted text wherever they stand (`secret|admin` is `secret | admin`),
/// and `!` does at the start of a term; inside quotes every character is literal.
struct QueryLexer {
    enum Kind: Equatable {
        case openParen
        case closeParen
        case or
        case and
        case not
        /// `field` as written; `value` nil when nothing follows the operator.
        case comparison(field: String, op: QueryOperator, value: String?, valueColumn: Int, quoted: Bool)
        case mitm(code: String, argument: String?, argumentColumn: Int)
        case word(String)
        case phrase(String)
    }

    struct Token: Equatable {
        var kind: Kind
        var column: Int
        /// The text as written, for messages.
        var text: String
    }

    /// The mitmproxy codes that take an argument (a regex, or a number for `~c`).
    static let mitmCodesWithArgument: Set<String> = ["b", "bq", "bs", "c", "d", "dst", "h", "hq", "hs", "m", "src", "t", "tq", "ts", "u"]

    private let chars: [Character]
    private var i = 0

    init(_ text: String) { chars = Array(text) }

    static func tokens(_ text: String) throws(QuerySyntaxError) -> [Token] {
        var lexer = QueryLexer(text)
        var tokens: [Token] = []
        while let token = try lexer.next() { tokens.append(token) }
        return tokens
    }

    var endColumn: Int { chars.count + 1 }

    private mutating func next() throws(QuerySyntaxError) -> Token? {
        while i < chars.count, chars[i].isWhitespace { i += 1 }
        guard i < chars.count else { return nil }
        let start = i
        let column = i + 1
        let c = chars[i]
        switch c {
        case "(":
            i += 1
            return Token(kind: .openParen, column: column, text: "(")
        case ")":
            i += 1
            return Token(kind: .closeParen, column: column, text: ")")
        case "|":
            i += 1
            if i < chars.count, chars[i] == "|" { i += 1 }
            return Token(kind: .or, column: column, text: String(chars[start..<i]))
        case "&":
            i += 1
            if i < chars.count, chars[i] == "&" { i += 1 }
            return Token(kind: .and, column: column, text: String(chars[start..<i]))
        case "!":
            i += 1
            return Token(kind: .not, column: column, text: "!")
        case "\"":
            let text = try quoted()
            return Token(kind: .phrase(text), column: column, text: String(chars[start..<i]))
        case "~":
            return try mitm(column: column)
        default:
            break
        }
        // A field name followed by an operator, or a bare word.
        let nameEnd = fieldNameEnd(from: i)
        var opStart = nameEnd
        if isPointerField(start, nameEnd) {
            // `json:/POINTER ~REGEX`: spaces, then `~` directly followed by the regex.
            var k = nameEnd
            while k < chars.count, chars[k].isWhitespace { k += 1 }
            if k > nameEnd, k + 1 < chars.count, chars[k] == "~", !chars[k + 1].isWhitespace { opStart = k }
        }
        if nameEnd > i, let (op, opLength) = operatorAt(opStart) {
            let field = String(chars[i..<nameEnd])
            i = opStart + opLength
            let valueColumn = i + 1
            var value: String?
            var quoted = false
            if i < chars.count, chars[i] == "\"" {
                value = try self.quoted()
                quoted = true
            } else {
                let listsWithPipe = QueryLexer.pipeListFields.contains(field.lowercased()) && (op == .equal || op == .notEqual)
                let raw = rawValue(pipeMayContinueList: listsWithPipe)
                value = raw.isEmpty ? nil : raw
            }
            return Token(kind: .comparison(field: field, op: op, value: value, valueColumn: valueColumn, quoted: quoted),
                         column: column, text: String(chars[start..<i]))
        }
        while i < chars.count, !chars[i].isWhitespace, !QueryLexer.endsText(chars[i]) { i += 1 }
        let word = String(chars[start..<i])
        // `status >= 500` would otherwise be the bare field and two text searches, a silent
        // wrong answer: an operator with no field before it is an error (quoted, it is text).
        if let first = word.first, first == "=" || first == "<" || first == ">" || word.hasPrefix("!=") {
            throw QuerySyntaxError(column: column, message:
                "'\(word)' starts with an operator but has no field before it: write the comparison without spaces (status>=500), or quote the word to search for it")
        }
        switch word.lowercased() {
        case "or": return Token(kind: .or, column: column, text: word)
        case "and": return Token(kind: .and, column: column, text: word)
        case "not": return Token(kind: .not, column: column, text: word)
        default: return Token(kind: .word(word), column: column, text: word)
        }
    }

    /// Whether chars[start..<end] is a `json:` or `reqjson:` field.
    private func isPointerField(_ start: Int, _ end: Int) -> Bool {
        let name = String(chars[start..<end]).lowercased()
        return name.hasPrefix("json:") || name.hasPrefix("reqjson:")
    }

    /// The characters that end unquoted text (besides whitespace).
    static func endsText(_ c: Character) -> Bool { c == "(" || c == ")" || c == "|" || c == "&" }

    /// The end of a field name starting at `from`: letters, digits, `_` `.` `-`, and for the
    /// `json:` / `reqjson:` prefixes the JSON Pointer after them (anything up to an operator or space).
    private func fieldNameEnd(from start: Int) -> Int {
        var j = start
        guard j < chars.count, chars[j].isLetter || chars[j] == "_" else { return start }
        while j < chars.count, chars[j].isLetter || chars[j].isNumber || chars[j] == "_" || chars[j] == "." || chars[j] == "-" { j += 1 }
        if j < chars.count, chars[j] == ":" {
            let prefix = String(chars[start..<j]).lowercased()
            guard prefix == "json" || prefix == "reqjson" else { return j }
            j += 1
            // Every `~` directly in a pointer is the pointer's: `~0` and `~1` are its escapes and
            // any other is a malformed escape JSONPointer reports with its column. The regex
            // operator after a pointer is written after a space (`json:/name ~^a`).
            while j < chars.count, !chars[j].isWhitespace, !"=!<>()|&".contains(chars[j]) { j += 1 }
        }
        return j
    }

    private func operatorAt(_ j: Int) -> (QueryOperator, Int)? {
        guard j < chars.count else { return nil }
        let next: Character? = j + 1 < chars.count ? chars[j + 1] : nil
        switch chars[j] {
        case "=": return (.equal, next == "=" ? 2 : 1)
        case "!": return next == "=" ? (.notEqual, 2) : nil
        case "<": return next == "=" ? (.lessOrEqual, 2) : (.less, 1)
        case ">": return next == "=" ? (.greaterOrEqual, 2) : (.greater, 1)
        case "~": return (.regex, 1)
        default: return nil
        }
    }

    /// The older filter words' list fields, where `status=301|404` has always meant either code.
    static let pipeListFields: Set<String> = ["status", "method", "type", "kind"]

    /// An unquoted value: up to a space, or a `|`, `&` or `)` outside parentheses opened in the value.
    /// With `pipeMayContinueList`, a `|` directly followed by another list value (not a term of its
    /// own such as `kind=tunnel`, a parenthesis, `!`, `~x` or a keyword) stays in the value as a list
    /// separator, so the older filters' `status=301|404` keeps its meaning.
    private mutating func rawValue(pipeMayContinueList: Bool = false) -> String {
        let start = i
        var depth = 0
        while i < chars.count, !chars[i].isWhitespace {
            if chars[i] == "\\", i + 1 < chars.count { i += 2; continue }
            if chars[i] == "(" { depth += 1 }
            if chars[i] == ")" {
                if depth == 0 { break }
                depth -= 1
            }
            if depth == 0, chars[i] == "|", pipeMayContinueList, pipeContinuesList(at: i) { i += 1; continue }
            if depth == 0, chars[i] == "|" || chars[i] == "&" { break }
            i += 1
        }
        return String(chars[start..<i])
    }

    /// Whether the `|` at `k` is followed by a plain list value rather than the start of a term.
    private func pipeContinuesList(at k: Int) -> Bool {
        let next = k + 1
        guard next < chars.count else { return false }
        let c = chars[next]
        if c.isWhitespace || "()|&!~\"".contains(c) { return false }
        let nameEnd = fieldNameEnd(from: next)
        if nameEnd > next, operatorAt(nameEnd) != nil { return false }
        var end = next
        while end < chars.count, !chars[end].isWhitespace, !QueryLexer.endsText(chars[end]) { end += 1 }
        let word = String(chars[next..<end]).lowercased()
        return word != "or" && word != "and" && word != "not"
    }

    /// A `"…"` string starting at `i`; `\"` and `\\` stand for themselves, other backslashes stay
    /// (so a quoted regex keeps `\d`).
    private mutating func quoted() throws(QuerySyntaxError) -> String {
        let openColumn = i + 1
        i += 1
        var text = ""
        while i < chars.count {
            let c = chars[i]
            if c == "\\", i + 1 < chars.count, chars[i + 1] == "\"" || chars[i + 1] == "\\" {
                text.append(chars[i + 1])
                i += 2
                continue
            }
            if c == "\"" {
                i += 1
                return text
            }
            text.append(c)
            i += 1
        }
        throw QuerySyntaxError(column: endColumn, message: "expected '\"' to close the quoted string at column \(openColumn)")
    }

    private mutating func mitm(column: Int) throws(QuerySyntaxError) -> Token {
        let start = i
        i += 1
        while i < chars.count, chars[i].isLetter { i += 1 }
        let code = String(chars[(start + 1)..<i])
        guard !code.isEmpty else {
            throw QuerySyntaxError(column: column, message: "expected a filter after '~' (such as ~c 404, ~d example.com, ~b text)")
        }
        var argument: String?
        var argumentColumn = i + 1
        if QueryLexer.mitmCodesWithArgument.contains(code) {
            while i < chars.count, chars[i].isWhitespace { i += 1 }
            argumentColumn = i + 1
            if i < chars.count, chars[i] == "\"" {
                argument = try quoted()
            } else if i < chars.count, !QueryLexer.endsText(chars[i]) {
                argument = rawValue()
            }
        }
        return Token(kind: .mitm(code: code, argument: argument, argumentColumn: argumentColumn),
                     column: column, text: String(chars[start..<i]))
    }
}
