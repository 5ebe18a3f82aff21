import ExchangeLog
import ResponseSerialization

/// A query value, read for its field by the parser.
public enum QueryValue: Sendable, Equatable {
    /// Text compared as is (`=`, `!=`, `<`…), or a glob when it has `*` or `?`.
    case text(String)
    case glob(Glob)
    /// `status=404,4xx,200-299`: any of them.
    case statuses([StatusPattern])
    /// `method=GET,POST`, `type=json,string`, `kind=http,tunnel`: any of them.
    case anyOf([String])
    /// `method=G*`, `kind=web*,tunnel`, `type=*json`: names matched by globs (any case), any of them.
    case anyGlob([Glob])
    /// Numbers: status codes, JSON values; durations in seconds, sizes in bytes.
    case number(ExactNumber)
    /// Seconds since 1970 (an RFC 3339 stamp), or seconds relative to now (`-1h`).
    case time(Double)
    case relativeTime(Double)
    /// A regular expression (searched, case-insensitive).
    case regex(String)
    /// `json:/x=true`, `=false`, `=null`.
    case literal(JSON)
}
