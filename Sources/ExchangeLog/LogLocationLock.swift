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

    /// Whether `layout`'s lock file is the very file this lock holds (one directory spelled
    /// two ways: a symlink, `x/../logs`): flock conflicts between two opens even in one
    /// process, so a switch to it keeps this lock instead of refusing itself. Compared with
    /// the open descriptor, not a path: a symlink repointed since could name another
    /// process's lock file.
    func holds(_ layout: LogFileLayout) -> Bool {
        var held = stat(), named = stat()
        guard fd >= 0, fstat(fd, &held) == 0, stat(Self.path(layout), &named) == 0 else { return false }
        return held.st_dev == named.st_dev && held.st_ino == named.st_ino
    }

    static func path(_ layout: LogFileLayout) -> String { layout.directory + "/." + layout.fileName + ".lock" }

    func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}
