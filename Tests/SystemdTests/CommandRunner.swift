import Foundation
import XCTest

/// Runs tools the shipped files are checked with (systemd-analyze, make).
enum CommandRunner {
    struct Outcome {
        var status: Int32
        /// stdout and stderr interleaved, as a person running the command would see them.
        var output: String
    }

    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The executable's path on PATH, or a skip naming what to install.
    static func locate(_ name: String, package: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin", "/bin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw XCTSkip("\(name) is not installed (Debian package \(package); `make test-deps` installs it)")
    }

    static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        var environment = ProcessInfo.processInfo.environment
        // A parent make (make test) would hand its jobserver to a child make that cannot use it.
        for name in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "DESTDIR", "PREFIX", "BINDIR", "UNITDIR"] {
            environment[name] = nil
        }
        environment["SYSTEMD_COLORS"] = "0"
        environment["SYSTEMD_PAGER"] = ""
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
