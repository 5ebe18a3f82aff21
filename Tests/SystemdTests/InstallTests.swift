import Foundation
import XCTest

/// `make install` staged into a DESTDIR, without building (SKIP_BUILD=1).
final class InstallTests: XCTestCase {
    private var destination: URL!
    private var sample: URL!

    override func setUpWithError() throws {
        _ = try CommandRunner.locate("make", package: "make")
        let scratch = try CommandRunner.temporaryDirectory()
        destination = scratch.appendingPathComponent("root")
        sample = scratch.appendingPathComponent("sample.json")
        try #"{"listen": ["127.0.0.1:8080"]}"#.write(to: sample, atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws {
        if let sample { try? FileManager.default.removeItem(at: sample.deletingLastPathComponent()) }
    }

    private func make(_ target: String, _ variables: [String] = ["SKIP_BUILD=1"]) throws -> CommandRunner.Outcome {
        let makePath = try CommandRunner.locate("make", package: "make")
        return try CommandRunner.run(makePath, ["--no-print-directory", "-C", CommandRunner.packageRoot.path, target,
                                                "DESTDIR=\(destination.path)",
                                                "CONFIG_SAMPLE=\(sample.path)"] + variables)
    }

    /// `sudo make install` must not build: sudo's PATH lacks swift, and a root build leaves
    /// root-owned files in the user's .build. It copies the binary the user built (BIN).
    func testInstallCopiesTheBuiltBinaryAndNeverBuilds() throws {
        let fake = sample.deletingLastPathComponent().appendingPathComponent("tapwire-built")
        try "#!/bin/sh\n".write(to: fake, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(fake.path, 0o755), 0)
        // SWIFT=false: any build step would fail the install.
        let outcome = try make("install", ["BIN=\(fake.path)", "SWIFT=false"])
        XCTAssertEqual(outcome.status, 0, outcome.output)
        XCTAssertEqual(try contents("usr/local/bin/tapwire"), "#!/bin/sh\n")

        let missing = try make("install", ["BIN=/nonexistent/tapwire", "SWIFT=false"])
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.output.contains("run `make release` as yourself first"), missing.output)
    }

    private func staged(_ path: String) -> URL { destination.appendingPathComponent(path) }

    private func contents(_ path: String) throws -> String {
        try String(contentsOf: staged(path), encoding: .utf8)
    }

    func testInstallStagesUnitsAndSampleConfig() throws {
        let outcome = try make("install")

        XCTAssertEqual(outcome.status, 0, outcome.output)
        let shipped = CommandRunner.packageRoot.appendingPathComponent("systemd")
        XCTAssertEqual(try contents("etc/systemd/system/tapwire.service"),
                       try String(contentsOf: shipped.appendingPathComponent("tapwire.service"), encoding: .utf8))
        XCTAssertEqual(try contents("etc/systemd/system/tapwire.socket"),
                       try String(contentsOf: shipped.appendingPathComponent("tapwire.socket"), encoding: .utf8))
        XCTAssertEqual(try contents("etc/tapwire/tapwire.json"), try String(contentsOf: sample, encoding: .utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: staged("etc/tapwire/tapwire.json").path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o644, "the dynamic service user must be able to read the config")
        XCTAssertFalse(FileManager.default.fileExists(atPath: staged("usr/local/bin/tapwire").path),
                       "SKIP_BUILD=1 installs no binary")
    }

    func testInstallNeverReplacesAnExistingConfig() throws {
        let config = staged("etc/tapwire/tapwire.json")
        try FileManager.default.createDirectory(at: config.deletingLastPathComponent(), withIntermediateDirectories: true)
        let mine = #"{"listen": ["0.0.0.0:3128"]}"#
        try mine.write(to: config, atomically: true, encoding: .utf8)

        let outcome = try make("install")

        XCTAssertEqual(outcome.status, 0, outcome.output)
        XCTAssertEqual(try contents("etc/tapwire/tapwire.json"), mine)
        XCTAssertTrue(outcome.output.contains("keeping existing"), outcome.output)
        XCTAssertTrue(FileManager.default.fileExists(atPath: staged("etc/systemd/system/tapwire.service").path))
    }

    func testPrefixMovesTheBinaryTheUnitStarts() throws {
        let outcome = try make("install", ["SKIP_BUILD=1", "PREFIX=/usr"])

        XCTAssertEqual(outcome.status, 0, outcome.output)
        let execStart = try contents("etc/systemd/system/tapwire.service")
            .split(separator: "\n").filter { $0.hasPrefix("ExecStart=") }
        XCTAssertEqual(execStart, [
            "ExecStart=/usr/bin/tapwire run --config ${CONFIGURATION_DIRECTORY}/tapwire.json --log-dir ${LOGS_DIRECTORY}",
        ])
    }

    func testUninstallRemovesUnitsAndKeepsConfig() throws {
        XCTAssertEqual(try make("install").status, 0)

        let outcome = try make("uninstall")

        XCTAssertEqual(outcome.status, 0, outcome.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: staged("etc/systemd/system/tapwire.service").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: staged("etc/systemd/system/tapwire.socket").path))
        XCTAssertEqual(try contents("etc/tapwire/tapwire.json"), try String(contentsOf: sample, encoding: .utf8))
    }

    func testInstallRefusesWithoutSampleConfig() throws {
        try FileManager.default.removeItem(at: sample)

        let outcome = try make("install")

        XCTAssertNotEqual(outcome.status, 0)
        XCTAssertTrue(outcome.output.contains("sample config missing"), outcome.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: staged("etc/systemd/system/tapwire.service").path))
    }
}
