/// Why the engine could not start.
enum EngineError: Error, CustomStringConvertible {
    case eventBase
    case listen(String, String)
    case badAddress(String)
    var description: String {
        switch self {
        case .eventBase: return "could not create an event base"
        case .listen(let a, let why): return "cannot listen on \(a): \(why)"
        case .badAddress(let a): return "bad address \(a)"
        }
    }
}
