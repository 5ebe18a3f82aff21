import HTTP1
import Synchronization

/// Answers a listener's requests from recorded responses (`replay`): an index built off the
/// loops (at start and at each reload) and swapped in whole, so a lookup on a loop is one
/// hash under a lock held for nothing longer than that.
public final class ReplayResponder: Sendable {
    /// What a request without a recorded answer gets (`replay.notFound`).
    public enum NotFound: String, Sendable, Equatable, CaseIterable {
        /// Sent to the network as usual.
        case forward
        /// `404 Not Found` (or `502 Bad Gateway`) from Tapwire, naming the request.
        case notFound = "404"
        case badGateway = "502"
    }

    public let match: ReplayMatch
    public let notFound: NotFound
    /// The log directory answers come from (named in the not-found answer).
    public let directory: String
    private let index: Mutex<[String: ReplayedResponse]>

    public init(match: ReplayMatch, notFound: NotFound, directory: String, index: [String: ReplayedResponse]) {
        self.match = match
        self.notFound = notFound
        self.directory = directory
        self.index = Mutex(index)
    }

    /// Replaces the answers (a reload re-read the directory).
    public func replace(_ fresh: [String: ReplayedResponse]) {
        index.withLock { $0 = fresh }
    }

    public var count: Int { index.withLock { $0.count } }

    /// The recorded answer for a request, if any.
    public func answer(method: String, url: String) -> ReplayedResponse? {
        let key = match.key(method: method, url: url)
        return index.withLock { $0[key] }
    }
}
