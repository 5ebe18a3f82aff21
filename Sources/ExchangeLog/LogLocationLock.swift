#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `<directory>/.<fileName>.lock`, held while this process writes
/// that log. A second Tapwire on the same log (say, started to try out the live config)
/// would otherwise run start-up recovery in it: delete the live archiver's `.gz.tmp`, start
/// its own, and leave a truncated `.gz` with no plain copy if stopped midway. The kernel
/// drops the lock when the process ends, however it ends.
final class LogLocationLock {
    let path: String
    private var fd: Int32 = -1

    init(_ layout: LogFileLayout, fileSystem: LogFileSystem) throws(LogIOError) {
        path = Self.path(layout)
        try fileSystem.makeDirectories(layout.directory)
        try fileSystem.check(.lock, path)
        let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard opened >= 0 else { throw LogIOError(.open, path, code: errno) }
        guard flock(opened, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(opened)
            throw LogIOError(.lock, path, code: code)
        }
        fd = opened
    }

    /// Whether two layouts name one lock file (one directory spelled two ways: a symlink,
    /// `x/../logs`): flock conflicts between two opens even in one process, so a switch
    /// between them keeps the lock it holds instead of refusing itself.
    static func sameLocation(_ a: LogFileLayout, _ b: LogFileLayout) -> Bool {
        var sa = stat(), sb = stat()
        guard stat(path(a), &sa) == 0, stat(path(b), &sb) == 0 else { return false }
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
    }

    static func path(_ layout: LogFileLayout) -> String { layout.directory + "/." + layout.fileName + ".lock" }

    func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}
