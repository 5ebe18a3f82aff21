#if canImport(Glibc)
import Glibc
#endif

/// A failed system call on a log file, with the errno it returned.
public struct LogIOError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: LogFileOperation
    public var path: String
    public var code: Int32

    public init(_ operation: LogFileOperation, _ path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var description: String {
        if operation == .lock && code == EWOULDBLOCK {
            return "log \(path) is held: another tapwire process writes this log"
        }
        return "log \(operation.rawValue) \(path): \(String(cString: strerror(code)))"
    }

    /// Fits in the `reason` of a loss record: `write failed: ENOSPC`.
    public var shortReason: String { "\(operation.rawValue) failed: \(LogIOError.errnoName(code))" }

    static func errnoName(_ code: Int32) -> String {
        switch code {
        case ENOSPC: return "ENOSPC"
        case EIO: return "EIO"
        case EACCES: return "EACCES"
        case EPERM: return "EPERM"
        case ENOENT: return "ENOENT"
        case EROFS: return "EROFS"
        case EDQUOT: return "EDQUOT"
        case EFBIG: return "EFBIG"
        case EBADF: return "EBADF"
        case EMFILE: return "EMFILE"
        case ENFILE: return "ENFILE"
        case ENOTDIR: return "ENOTDIR"
        case EEXIST: return "EEXIST"
        default: return "errno \(code)"
        }
    }
}
