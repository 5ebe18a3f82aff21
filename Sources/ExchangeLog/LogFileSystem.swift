#if canImport(Glibc)
import Glibc
#endif

/// The file system calls the writer and archiver make; each one is a point where a test can
/// inject a failure, since root ignores permission bits and disks rarely fail on cue.
public enum LogFileOperation: String, Sendable {
    case mkdir, open, write, sync, rename, unlink, read, lock
}

/// Called before each operation with the path concerned; returning an errno makes the operation
/// fail with it without touching the file system. It may also block, to stall the writer.
public typealias LogFaultInjector = @Sendable (LogFileOperation, String) -> Int32?

/// Thin wrappers over the POSIX calls, each consulting the fault injector first.
struct LogFileSystem: Sendable {
    var faults: LogFaultInjector?

    func check(_ operation: LogFileOperation, _ path: String) throws(LogIOError) {
        if let faults, let code = faults(operation, path) {
            throw LogIOError(operation, path, code: code)
        }
    }

    /// Creates `path` and its missing parents (mode 0750).
    func makeDirectories(_ path: String) throws(LogIOError) {
        try check(.mkdir, path)
        var status = stat()
        if stat(path, &status) == 0 {
            if status.st_mode & S_IFMT == S_IFDIR { return }
            throw LogIOError(.mkdir, path, code: ENOTDIR)
        }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectories(String(path[..<slash]))
        }
        if mkdir(path, 0o750) != 0 && errno != EEXIST {
            throw LogIOError(.mkdir, path, code: errno)
        }
    }

    func openAppend(_ path: String) throws(LogIOError) -> Int32 {
        try check(.open, path)
        while true {
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
            if fd >= 0 { return fd }
            if errno != EINTR { throw LogIOError(.open, path, code: errno) }
        }
    }

    func openRead(_ path: String) throws(LogIOError) -> Int32 {
        try check(.open, path)
        while true {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { return fd }
            if errno != EINTR { throw LogIOError(.open, path, code: errno) }
        }
    }

    func openCreateTruncate(_ path: String) throws(LogIOError) -> Int32 {
        try check(.open, path)
        while true {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
            if fd >= 0 { return fd }
            if errno != EINTR { throw LogIOError(.open, path, code: errno) }
        }
    }

    /// Writes every byte, resuming after partial writes and EINTR. On failure `written` tells
    /// how many bytes did reach the file, so the caller can cut a half line off again.
    func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String,
                  written: inout Int) throws(LogIOError) {
        written = 0
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        try check(.write, path)
        while written < bytes.count {
            let result = write(fd, base + written, bytes.count - written)
            if result > 0 {
                written += result
            } else if result < 0 && errno == EINTR {
                continue
            } else {
                throw LogIOError(.write, path, code: result == 0 ? EIO : errno)
            }
        }
    }

    func sync(_ fd: Int32, path: String) throws(LogIOError) {
        try check(.sync, path)
        if fsync(fd) != 0 { throw LogIOError(.sync, path, code: errno) }
    }

    /// Makes a rename or unlink in `directory` durable.
    func syncDirectory(_ directory: String) throws(LogIOError) {
        try check(.sync, directory)
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw LogIOError(.sync, directory, code: errno) }
        defer { close(fd) }
        if fsync(fd) != 0 { throw LogIOError(.sync, directory, code: errno) }
    }

    func rename(_ from: String, _ to: String) throws(LogIOError) {
        try check(.rename, from)
        if Glibc.rename(from, to) != 0 { throw LogIOError(.rename, from, code: errno) }
    }

    func unlink(_ path: String) throws(LogIOError) {
        try check(.unlink, path)
        if Glibc.unlink(path) != 0 && errno != ENOENT { throw LogIOError(.unlink, path, code: errno) }
    }

    func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Names in `directory`, or an empty list when it cannot be read.
    func listDirectory(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
