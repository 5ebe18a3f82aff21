import ExchangeLog
import ResponseSerialization

/// A comparison operator of the query language.
public enum QueryOperator: String, Sendable, Equatable, CaseIterable {
    case equal = "="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    /// Regular expression search, case-insensitive.
    case regex = "~"
}

/// A parsed query: a pure value, evaluated by `QueryEvaluator`. Values are already checked and
/// typed by the parser (a status pattern, a duration in seconds, a JSON Pointer…), so evaluation
/// never fails: a record without the field simply does not match.
public indirect enum QueryExpression: Sendable, Equatable {
    case all
    case and([QueryExpression])
    case or([QueryExpression])
    case not(QueryExpression)
    /// `FIELD OP VALUE`.
    case compare(QueryField, QueryOperator, QueryValue)
    /// A bare field: `error`, `failure`, `json:/x`, `req.header.x-trace`.
    case exists(QueryField)
    /// A bare word or quoted phrase: case-insensitive substring of the URL, a header value or a
    /// decoded body.
    case text(String)
    /// mitmproxy filters that are no `FIELD OP VALUE` of ours.
    case bodyRegex(String, QueryMessageSide)
    case headerLineRegex(String, QueryMessageSide)
    case contentTypeRegex(String, QueryMessageSide)
    /// `~s`: the record has a response; `~q`: a request without one.
    case hasResponse
    case requestWithoutResponse
    /// `~a`: a response of type JavaScript, CSS, image or Flash.
    case asset
}

/// Which message of an exchange a mitmproxy filter looks at.
public enum QueryMessageSide: Sendable, Equatable {
    case request, response, either
}
