import ExchangeLog
import Foundation
import ResponseSerialization

/// Recursive descent over `QueryLexer`'s tokens into a `QueryExpression`:
///
///     query   := or?
///     or      := and (('or' | '|') and)*
///     and     := unary (('and' | '&')? unary)*        side by side means and
///     unary   := ('not' | '!') unary | primary
///     primary := '(' or ')' | FIELD OP VALUE | FIELD | ~x [ARG] | WORD | "PHRASE"
///
/// `not` binds tightest, then `and`, then `or`. Side by side (without a written `and`), several
/// `FIELD=VALUE` terms on the same field are alternatives, as the older filter words were
/// (`status=404 status=503`); write `and` to require both.
///
/// Every error names the column it was found at and what was expected there.
struct QueryParser {
    /// The deepest nesting of parentheses and `not`s accepted: the parser, the evaluator and
    /// the prefilter recurse once per level, and a hostile `((((…` must get an error, not
    /// exhaust the stack.
    static let maxDepth = 256

    private let tokens: [QueryLexer.Token]
    private let endColumn: Int
    private var position = 0
    private var depth = 0

    static func parse(_ text: String) throws(QuerySyntaxError) -> QueryExpression {
        let tokens = try QueryLexer.tokens(text)
        var parser = QueryParser(tokens: tokens, endColumn: text.count + 1)
        guard !tokens.isEmpty else { return .all }
        let expression = try parser.parseOr()
        if let extra = parser.peek {
            if case .closeParen = extra.kind {
                throw QuerySyntaxError(column: extra.column, message: "unexpected ')' with no '(' before it")
            }
            throw QuerySyntaxError(column: extra.column, message: "unexpected '\(extra.text)'")
        }
        return expression
    }

    private init(tokens: [QueryLexer.Token], endColumn: Int) {
        self.tokens = tokens
        self.endColumn = endColumn
    }

    private var peek: QueryLexer.Token? { position < tokens.count ? tokens[position] : nil }

    private mutating func parseOr() throws(QuerySyntaxError) -> QueryExpression {
        var terms = [try parseAnd()]
        while let token = peek, token.kind == .or {
            position += 1
            terms.append(try parseAnd(after: token))
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd(after previous: QueryLexer.Token? = nil) throws(QuerySyntaxError) -> QueryExpression {
        var segments: [[QueryExpression]] = [[try parseUnary(after: previous)]]
        while let token = peek {
            switch token.kind {
            case .and:
                position += 1
                segments.append([try parseUnary(after: token)])
            case .or, .closeParen:
                return QueryParser.combine(segments)
            default:
                segments[segments.count - 1].append(try parseUnary(after: nil))
            }
        }
        return QueryParser.combine(segments)
    }

    /// Within a run of side-by-side terms, `FIELD=VALUE` terms on one field become one `or`
    /// (at the first one's place); the runs and the rest are and-ed.
    private static func combine(_ segments: [[QueryExpression]]) -> QueryExpression {
        var terms: [QueryExpression] = []
        for segment in segments {
            var merged: [QueryExpression] = []
            var slotOfField: [String: Int] = [:]
            for term in segment {
                guard case .compare(let field, .equal, _) = term else {
                    merged.append(term)
                    continue
                }
                let key = field.description
                if let slot = slotOfField[key] {
                    if case .or(let alternatives) = merged[slot] {
                        merged[slot] = .or(alternatives + [term])
                    } else {
                        merged[slot] = .or([merged[slot], term])
                    }
                } else {
                    slotOfField[key] = merged.count
                    merged.append(term)
                }
            }
            terms += merged
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseUnary(after previous: QueryLexer.Token?) throws(QuerySyntaxError) -> QueryExpression {
        guard let token = peek else {
            if let previous {
                throw QuerySyntaxError(column: endColumn, message: "expected a term after '\(previous.text)'")
            }
            throw QuerySyntaxError(column: endColumn, message: "expected a term")
        }
        if token.kind == .not {
            position += 1
            try enter(token)
            defer { depth -= 1 }
            return .not(try parseUnary(after: token))
        }
        return try parsePrimary(after: previous)
    }

    private mutating func parsePrimary(after previous: QueryLexer.Token?) throws(QuerySyntaxError) -> QueryExpression {
        guard let token = peek else {
            throw QuerySyntaxError(column: endColumn, message: "expected a term")
        }
        position += 1
        switch token.kind {
        case .openParen:
            if let next = peek, next.kind == .closeParen {
                throw QuerySyntaxError(column: next.column, message: "expected a term after '('")
            }
            try enter(token)
            defer { depth -= 1 }
            let inner = try parseOr()
            guard let close = peek, close.kind == .closeParen else {
                throw QuerySyntaxError(column: peek?.column ?? endColumn,
                                       message: "expected ')' to close '(' at column \(token.column)")
            }
            position += 1
            return inner
        case .closeParen:
            let what = previous.map { "a term after '\($0.text)'" } ?? "a term"
            throw QuerySyntaxError(column: token.column, message: "expected \(what), found ')'")
        case .or, .and:
            let what = previous.map { "a term after '\($0.text)'" } ?? "a term"
            throw QuerySyntaxError(column: token.column, message: "expected \(what), found '\(token.text)'")
        case .not:
            // parseUnary handles `not`; reaching here would be a parser bug, reported as a syntax error.
            throw QuerySyntaxError(column: token.column, message: "unexpected '\(token.text)'")
        case .word(let word):
            if let field = try QueryParser.field(named: word, column: token.column) {
                return .exists(field)
            }
            return .text(word)
        case .phrase(let text):
            guard !text.isEmpty else { throw QuerySyntaxError(column: token.column, message: "expected text inside the quotes") }
            return .text(text)
        case .comparison(let name, let op, let value, let valueColumn, let quoted):
            guard let field = try QueryParser.field(named: name, column: token.column) else {
                throw QuerySyntaxError(column: token.column, message: QueryParser.unknownField(name, in: token.text))
            }
            guard let value else {
                throw QuerySyntaxError(column: valueColumn, message: "expected a value after '\(op.rawValue)'")
            }
            return .compare(field, op, try QueryValueReader.read(value, quoted: quoted, for: field, op: op, column: valueColumn))
        case .mitm(let code, let argument, let argumentColumn):
            return try QueryParser.mitm(code, argument, column: token.column, argumentColumn: argumentColumn)
        }
    }

    private mutating func enter(_ token: QueryLexer.Token) throws(QuerySyntaxError) {
        depth += 1
        if depth > QueryParser.maxDepth {
            throw QuerySyntaxError(column: token.column,
                                   message: "expected at most \(QueryParser.maxDepth) levels of parentheses and 'not'")
        }
    }

    static func unknownField(_ name: String, in term: String) -> String {
        "unknown field '\(name)' in '\(term)'; expected one of " + QueryField.simpleNames.map(\.0).joined(separator: ", ")
            + ", req.header.NAME, res.header.NAME, json:/POINTER, reqjson:/POINTER"
    }

    /// The field `name` names; nil when it names none (a bare word is then text to search).
    static func field(named name: String, column: Int) throws(QuerySyntaxError) -> QueryField? {
        let lower = name.lowercased()
        if let simple = QueryField.simpleNames.first(where: { $0.0 == lower }) { return simple.1 }
        for (prefix, isRequest) in [("req.header.", true), ("request.header.", true), ("res.header.", false), ("response.header.", false)]
            where lower.hasPrefix(prefix) {
            let header = String(lower.dropFirst(prefix.count))
            guard !header.isEmpty else {
                throw QuerySyntaxError(column: column + prefix.count, message: "expected a header name after '\(prefix)'")
            }
            return isRequest ? .requestHeader(header) : .responseHeader(header)
        }
        for (prefix, isRequest) in [("json:", false), ("reqjson:", true)] where lower.hasPrefix(prefix) {
            let text = String(name.dropFirst(prefix.count))
            guard !text.isEmpty else {
                throw QuerySyntaxError(column: column + prefix.count, message: "expected a JSON Pointer such as /user/id after '\(prefix)'")
            }
            let pointer: JSONPointer
            do {
                pointer = try JSONPointer(text)
            } catch {
                throw QuerySyntaxError(column: column + prefix.count + QueryParser.characterOffset(text, byte: error.offset),
                                       message: "expected a JSON Pointer such as /user/id: \(error.message)")
            }
            return isRequest ? .requestJSON(pointer) : .responseJSON(pointer)
        }
        return nil
    }

    static func characterOffset(_ text: String, byte: Int) -> Int {
        var bytes = 0
        var characters = 0
        for c in text {
            if bytes >= byte { break }
            bytes += c.utf8.count
            characters += 1
        }
        return characters
    }

    static let mitmCodes = "~a ~all ~b ~bq ~bs ~c ~d ~dst ~e ~h ~hq ~hs ~http ~m ~q ~s ~src ~t ~tcp ~tq ~ts ~u ~websocket"

    private static func mitm(_ code: String, _ argument: String?, column: Int, argumentColumn: Int) throws(QuerySyntaxError) -> QueryExpression {
        func regex() throws(QuerySyntaxError) -> String {
            guard let argument, !argument.isEmpty else {
                throw QuerySyntaxError(column: argumentColumn, message: "expected a regular expression after '~\(code)'")
            }
            try QueryValueReader.checkRegex(argument, column: argumentColumn)
            return argument
        }
        switch code {
        case "c":
            guard let argument, !argument.isEmpty else {
                throw QuerySyntaxError(column: argumentColumn, message: "expected a status code after '~c'")
            }
            // The one status pattern `status=` reads, so both accept the same codes (100-999).
            guard let pattern = StatusPattern(argument) else {
                throw QuerySyntaxError(column: argumentColumn, message: "expected \(StatusPattern.expected) after '~c', found '\(argument)'")
            }
            return .compare(.status, .equal, .statuses([pattern]))
        case "d": return .compare(.host, .regex, .regex(try regex()))
        case "m": return .compare(.method, .regex, .regex(try regex()))
        case "u": return .compare(.url, .regex, .regex(try regex()))
        case "src": return .compare(.client, .regex, .regex(try regex()))
        case "dst": return .compare(.upstream, .regex, .regex(try regex()))
        case "b": return .bodyRegex(try regex(), .either)
        case "bq": return .bodyRegex(try regex(), .request)
        case "bs": return .bodyRegex(try regex(), .response)
        case "h": return .headerLineRegex(try regex(), .either)
        case "hq": return .headerLineRegex(try regex(), .request)
        case "hs": return .headerLineRegex(try regex(), .response)
        case "t": return .contentTypeRegex(try regex(), .either)
        case "tq": return .contentTypeRegex(try regex(), .request)
        case "ts": return .contentTypeRegex(try regex(), .response)
        case "e": return .exists(.error)
        case "s": return .hasResponse
        case "q": return .requestWithoutResponse
        case "a": return .asset
        case "all": return .all
        case "http": return .compare(.kind, .equal, .anyOf(["http"]))
        case "tcp": return .compare(.kind, .equal, .anyOf(["tunnel"]))
        case "websocket": return .compare(.kind, .equal, .anyOf(["websocket"]))
        default:
            throw QuerySyntaxError(column: column, message: "unknown filter '~\(code)'; expected one of \(mitmCodes)")
        }
    }
}
